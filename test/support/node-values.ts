import type { RedisNodes } from './types';

/**
 * Values of `key` on every node via fresh admin connections: null where absent or the node is down,
 * undefined where the node is paused (it cannot be read).
 */
export async function valuesOnNodes(nodes: RedisNodes, key: string): Promise<(string | null | undefined)[]> {
  return Promise.all(
    nodes.nodes.map(async (node) => {
      if (node.paused) return undefined;
      if (!node.running) return null;
      const client = node.redis();
      try {
        return await client.get(key);
      } finally {
        client.disconnect();
      }
    }),
  );
}
