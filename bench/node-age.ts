import type { RedisNodes } from '../test/support';
import { sleep } from './timing';

/**
 * Waits until every node has been up for at least `ms` (as the node itself reports it, in whole seconds).
 * nestjs-redlock's restart guard (on by default) makes a node refuse locks during its first max-ttl of
 * uptime, so freshly started benchmark nodes must age past the largest ttl a scenario uses first.
 */
export async function waitForNodeAge(
  nodes: RedisNodes,
  ms: number,
  log: (message: string) => void,
): Promise<void> {
  const seconds = Math.ceil(ms / 1000);
  const clients = nodes.nodes.map((node) => node.redis());
  try {
    let announced = false;
    for (;;) {
      const uptimes = await Promise.all(
        clients.map(async (client) =>
          Number(/uptime_in_seconds:(\d+)/.exec(await client.info('server'))?.[1] ?? 0),
        ),
      );
      const youngest = Math.min(...uptimes);
      if (youngest >= seconds) return;
      if (!announced) {
        log(`  waiting ${seconds - youngest} s until the nodes are ${seconds} s old (restart guard)`);
        announced = true;
      }
      await sleep(250);
    }
  } finally {
    for (const client of clients) client.disconnect();
  }
}
