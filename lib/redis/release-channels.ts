import type { Redis } from 'ioredis';
import { ReleaseListener, withTimeout } from '../core';
import { isClusterClient } from './cluster-slots';
import type { NodeChannels } from './script-node';

/** How long a new subscription may take before the waiter falls back to polling, in ms. */
const SUBSCRIBE_TIMEOUT = 250;
/** The same for a channel nobody waits on (revocations): a slow confirmation on a loaded host is still one. */
const BACKGROUND_SUBSCRIBE_TIMEOUT = 3_000;

interface ClusterLike {
  options: { redisOptions?: object };
}

/** A channel's listener: `'released'` with the message published, `'lost'` when messages may have been missed. */
type ChannelListener = (event: 'released' | 'lost', message?: string) => void;

/** One subscriber connection as {@link ChannelHub} uses it: a client kind opens it (channels.ts's port). */
export interface SubscriberPort {
  /** Resolves once the server confirmed the subscription. */
  subscribe(channels: readonly string[]): Promise<unknown>;
  /** Best effort, never rejects. */
  unsubscribe(channels: readonly string[]): void;
  close(): void;
}

/** Opens a subscriber whose messages go to `deliver` and whose lost connections go to `lost`. */
export type SubscriberFactory = (
  deliver: (channel: string, message: string) => void,
  lost: () => void,
) => SubscriberPort;

/**
 * The release announcements and revocations of one node, whatever its client kind: one subscriber per node,
 * opened on first use and shared by every waiter of the process; a channel is subscribed while somebody
 * listens on it and unsubscribed when the last listener leaves, so the listener map never outgrows the
 * current waiters. When the subscriber connection drops, every listener is told (`'lost'`) so waiters retry
 * on their own timers instead of waiting for a message that cannot come.
 */
export class ChannelHub implements NodeChannels {
  private subscriber: SubscriberPort | undefined;
  private readonly listeners = new Map<string, Set<ChannelListener>>();

  constructor(private readonly open: SubscriberFactory) {}

  /** Release announcements of `keys` (`<key>:released`). */
  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    return this.listen(
      keys.map((key) => `${key}:released`),
      listener,
    );
  }

  /** Every message published on `channel` (revocations, docs/DESIGN.md §16), on the same connection. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => void> {
    return this.listen(
      [channel],
      (event, message) => {
        if (event === 'released' && message !== undefined) onMessage(message);
      },
      BACKGROUND_SUBSCRIBE_TIMEOUT,
    );
  }

  private async listen(
    channels: readonly string[],
    listener: ChannelListener,
    timeout = SUBSCRIBE_TIMEOUT,
  ): Promise<() => void> {
    const subscriber = this.connect();
    const fresh: string[] = [];
    for (const channel of channels) {
      let set = this.listeners.get(channel);
      if (!set) {
        set = new Set();
        this.listeners.set(channel, set);
        fresh.push(channel);
      }
      set.add(listener);
    }
    const unwatch = () => {
      const idle: string[] = [];
      for (const channel of channels) {
        const set = this.listeners.get(channel);
        if (!set) continue;
        set.delete(listener);
        if (set.size === 0) {
          this.listeners.delete(channel);
          idle.push(channel);
        }
      }
      if (idle.length > 0) subscriber.unsubscribe(idle);
    };
    if (fresh.length > 0) {
      try {
        await withTimeout(
          subscriber.subscribe(fresh),
          timeout,
          () => new Error(`subscription not confirmed within ${timeout} ms`),
        );
      } catch (error) {
        unwatch();
        throw error;
      }
    }
    return unwatch;
  }

  close(): void {
    this.subscriber?.close();
    this.subscriber = undefined;
    this.listeners.clear();
  }

  private connect(): SubscriberPort {
    this.subscriber ??= this.open(
      (channel, message) => {
        const set = this.listeners.get(channel);
        if (set) for (const listener of [...set]) listener('released', message);
      },
      () => {
        for (const set of this.listeners.values()) for (const listener of [...set]) listener('lost');
      },
    );
    return this.subscriber;
  }
}

/** The channels of an ioredis client (or Cluster): its own subscriber connection, a duplicate of it. */
export function ioredisChannels(client: Redis): ChannelHub {
  return new ChannelHub((deliver, lost) => ioredisSubscriber(client, deliver, lost));
}

function ioredisSubscriber(
  client: Redis,
  deliver: (channel: string, message: string) => void,
  lost: () => void,
): SubscriberPort {
  // Subscriptions are idempotent, so queueing them while connecting (and replaying them after a
  // reconnect, which ioredis does by itself) is harmless — unlike lock commands.
  const options = {
    enableOfflineQueue: true,
    lazyConnect: false,
    disconnectTimeout: 200,
    // ioredis re-sends SUBSCRIBE after a reconnect by itself, with nobody awaiting it: with a retry limit
    // (inherited from the lock client, 0) a second drop rejects it unhandled and ends the process.
    maxRetriesPerRequest: null,
  };
  // A Cluster's duplicate() takes its startup nodes first; announcements (PUBLISH) reach every node.
  const subscriber = isClusterClient(client)
    ? ((client as unknown as { duplicate(nodes: unknown[], options: object): Redis }).duplicate([], {
        enableOfflineQueue: true,
        lazyConnect: false,
        // Merged into the cluster's own redisOptions: its password, username and tls stay.
        redisOptions: { ...(client as unknown as ClusterLike).options.redisOptions, ...options },
      }) as Redis)
    : client.duplicate(options);
  subscriber.on('error', () => undefined);
  subscriber.on('message', deliver);
  subscriber.on('close', lost);
  return {
    subscribe: (channels) => subscriber.subscribe(...channels),
    unsubscribe: (channels) => {
      // Also while (re)connecting: the offline queue sends it after a SUBSCRIBE still queued (one that timed
      // out under load), which would otherwise leave the channel subscribed on that connection for good.
      if (subscriber.status !== 'end') subscriber.unsubscribe(...channels).catch(() => undefined);
    },
    close: () => {
      if (subscriber.status !== 'end') subscriber.disconnect();
    },
  };
}
