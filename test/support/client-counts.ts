import type { RedisNodes } from './types';

/** Connections open on each node, from CLIENT LIST, not counting the admin connection asking. */
export function clientCounts(nodes: RedisNodes): Promise<number[]> {
  return Promise.all(
    nodes.nodes.map(async (node) => {
      const admin = node.redis();
      try {
        const list = (await admin.client('LIST')) as string;
        return list.trim().split('\n').length - 1;
      } finally {
        admin.disconnect();
      }
    }),
  );
}
