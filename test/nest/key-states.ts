import type { RedisNodeHandle, RedisNodes } from '../support';

/** What {@link keyOnEveryNode} waits for: the key present on a node (`held`) or absent (`free`). */
export type KeyState = 'held' | 'free';

/**
 * Resolves once `key` is in `state` on every node — without polling: each node's keyspace notifications for
 * the key (`notify-keyspace-events KA`, set here) wake a re-read, and the subscription is in place before
 * the first read, so no change can slip between them. A key deleted, set, expired or evicted notifies.
 * Never resolves when the state is never reached: the test's time limit fails it.
 */
export async function keyOnEveryNode(nodes: RedisNodes, key: string, state: KeyState): Promise<void> {
  await Promise.all(nodes.nodes.map((node) => keyOnNode(node, key, state)));
}

async function keyOnNode(node: RedisNodeHandle, key: string, state: KeyState): Promise<void> {
  const subscriber = node.redis();
  const reader = node.redis();
  try {
    await reader.config('SET', 'notify-keyspace-events', 'KA');
    let changed = (): void => undefined;
    subscriber.on('message', () => changed());
    await subscriber.subscribe(`__keyspace@0__:${key}`);
    for (;;) {
      const next = new Promise<void>((resolve) => (changed = resolve));
      const present = (await reader.exists(key)) === 1;
      if (present === (state === 'held')) return;
      await next;
    }
  } finally {
    subscriber.disconnect();
    reader.disconnect();
  }
}
