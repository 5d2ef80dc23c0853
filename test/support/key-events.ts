import type { Redis } from 'ioredis';
import type { RedisNodeHandle } from './types';

/**
 * The keyspace notifications of one key on one node (`set`, `del`, `expired`...), by a subscriber opened with
 * {@link KeyEvents.open}: for a test that must go on once a key changed on a node (a late write undone, say)
 * instead of polling its value. Turns the node's notify-keyspace-events on while open, and back off on close.
 */
export class KeyEvents {
  private readonly events: string[] = [];
  private readonly changed = new Set<() => void>();

  private constructor(
    private readonly subscriber: Redis,
    private readonly node: RedisNodeHandle,
  ) {
    subscriber.on('message', (_channel: string, event: string) => {
      this.events.push(event);
      for (const check of [...this.changed]) check();
    });
  }

  /** Subscribed (confirmed) to `key`'s notifications on `node`: every later change of it is heard. */
  static async open(node: RedisNodeHandle, key: string): Promise<KeyEvents> {
    const admin = node.redis();
    try {
      await admin.config('SET', 'notify-keyspace-events', 'Kgx$');
    } finally {
      admin.disconnect();
    }
    const subscriber = node.redis();
    subscriber.on('error', () => undefined);
    await subscriber.subscribe(`__keyspace@0__:${key}`);
    return new KeyEvents(subscriber, node);
  }

  /** The events heard so far, in order. */
  get heard(): readonly string[] {
    return this.events;
  }

  /** Resolves once `event` was heard (since open), e.g. `'del'`. */
  next(event: string): Promise<void> {
    if (this.events.includes(event)) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (!this.events.includes(event)) return;
        this.changed.delete(check);
        resolve();
      };
      this.changed.add(check);
    });
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
    if (!this.node.running || this.node.paused) return;
    const admin = this.node.redis();
    try {
      await admin.config('SET', 'notify-keyspace-events', '');
    } finally {
      admin.disconnect();
    }
  }
}
