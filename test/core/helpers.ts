import { AcquireReply, LockNode, Redlock, RedlockOptions } from '../../lib';
import type { RedisNodes } from '../support';

/** Redlock instances created by a test file, all closed by {@link closeAll}. */
const created: Redlock[] = [];

/**
 * A Redlock over the given nodes, connected, with logging off unless asked. The restart guard is off unless
 * asked: the harness's nodes are seconds old, and the guard would (rightly) refuse them for a whole ttl.
 */
export async function redlockOn(nodes: RedisNodes, options: RedlockOptions = {}): Promise<Redlock> {
  const redlock = new Redlock(nodes.urls, { logger: false, restartGuard: false, ...options });
  created.push(redlock);
  await redlock.connect(2_000);
  return redlock;
}

export async function closeAll(): Promise<void> {
  await Promise.all(created.splice(0).map((redlock) => redlock.quit()));
}

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

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 10 ms until it is true or `timeout` ms passed; returns its last value. */
export async function eventually(condition: () => Promise<boolean>, timeout = 5_000): Promise<boolean> {
  const end = Date.now() + timeout;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > end) return false;
    await delay(10);
  }
}

/** A node that grants everything and counts its calls: bad input must be refused before any of them happens. */
export class CountingNode implements LockNode {
  calls = 0;
  constructor(readonly name: string) {}
  async acquire(): Promise<AcquireReply> {
    this.calls++;
    return { outcome: 'acquired', token: 0 };
  }
  async fence(): Promise<boolean> {
    this.calls++;
    return true;
  }
  async extend(): Promise<boolean> {
    this.calls++;
    return true;
  }
  async release(): Promise<number> {
    this.calls++;
    return 1;
  }
}

/** Three {@link CountingNode}s. */
export const countingNodes = (): CountingNode[] => [
  new CountingNode('a:1'),
  new CountingNode('b:1'),
  new CountingNode('c:1'),
];
