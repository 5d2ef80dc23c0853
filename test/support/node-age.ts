import { delay } from './waits';
import type { RedisNodes } from './types';

/** Each node's `uptime_in_seconds`, as its `INFO server` reports it (whole wall-clock seconds). */
export async function nodeUptimes(nodes: RedisNodes): Promise<number[]> {
  return Promise.all(
    nodes.nodes.map(async (node) => {
      const client = node.redis();
      try {
        return Number(/uptime_in_seconds:(\d+)/.exec(await client.info('server'))?.[1] ?? 0);
      } finally {
        client.disconnect();
      }
    }),
  );
}

/**
 * Waits until every node is past a restart-guard window of `ms`. nestjs-redlock's guard (on by default)
 * makes a node refuse locks while `uptime_in_seconds − 1` (a second taken off: INFO counts whole
 * wall-clock seconds) is below the window, so freshly started nodes must first report `⌈ms / 1000⌉ + 1`.
 */
export async function waitForNodeAge(
  nodes: RedisNodes,
  ms: number,
  log: (message: string) => void = () => undefined,
): Promise<void> {
  const seconds = Math.ceil(ms / 1000) + 1;
  let announced = false;
  for (;;) {
    const youngest = Math.min(...(await nodeUptimes(nodes)));
    if (youngest >= seconds) return;
    if (!announced) {
      log(`  waiting ${seconds - youngest} s until the nodes are ${seconds} s old (restart guard)`);
      announced = true;
    }
    await delay(250);
  }
}
