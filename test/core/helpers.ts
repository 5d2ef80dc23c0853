import { AcquireReply, LockNode, Redlock, RedlockOptions } from '../../lib';
import type { RedisNodes } from '../support';

export { delay, eventually, valuesOnNodes } from '../support';

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

/** The same nodes without release announcements (a user denied SUBSCRIBE): their instance polls. */
export function deafNodes<T extends LockNode>(nodes: readonly T[]): T[] {
  return nodes.map(
    (node) => new Proxy(node, { get: (t, p, r) => (p === 'watch' ? undefined : Reflect.get(t, p, r)) }),
  );
}

/** Quits `instances` (emptying it) on Jest's fake clock, which their quit() waits on, then real timers again. */
export async function quitOnFakeClock(instances: Redlock[]): Promise<void> {
  const quitting = Promise.all(instances.splice(0).map((redlock) => redlock.quit()));
  await jest.advanceTimersByTimeAsync(5_000);
  await quitting;
  jest.useRealTimers();
}
