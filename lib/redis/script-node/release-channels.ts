import { setMaxListeners } from 'node:events';
import type { Redis } from 'ioredis';
import { ReleaseListener, withTimeout } from '../../core';
import { isClusterClient } from './cluster-slots';
import { ended, ignoreLateSocketErrors } from './client-end';
import { SentinelWatch } from './sentinel-watch';
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

/**
 * One subscriber connection as {@link ChannelHub} uses it: a client kind opens it (channels.ts's port).
 * `sharded`: by SSUBSCRIBE (a Cluster's release announcements, each on its slot's primary) instead of SUBSCRIBE.
 */
export interface SubscriberPort {
  /** Resolves once the server confirmed the subscription; rejects when it cannot be had. */
  subscribe(channels: readonly string[], sharded: boolean): Promise<unknown>;
  /** Best effort, never rejects. */
  unsubscribe(channels: readonly string[], sharded: boolean): void;
  /** Resolves once the connection ended (never rejects). */
  close(): Promise<void>;
}

/** A server that has no SSUBSCRIBE (Redis 6) or denies it: its release scripts fall back to PUBLISH too. */
function shardedRefused(error: unknown): boolean {
  return error instanceof Error && /^(ERR unknown command|NOPERM)/i.test(error.message);
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
  /**
   * Aborted by close(): subscriptions still waiting for their confirmation end at once. Each waiting one
   * listens to it until it settles: no listener limit (many waiters subscribe at once; not a leak).
   */
  private readonly closing = new AbortController();

  /**
   * @param sharded release announcements come by sharded pub/sub (a Cluster node, `announce` in scripts.ts),
   *   until the server refuses SSUBSCRIBE — as it then refuses the scripts' SPUBLISH, which fall back alike.
   */
  constructor(
    private readonly open: SubscriberFactory,
    private sharded = false,
  ) {
    setMaxListeners(0, this.closing.signal);
  }

  /** Release announcements of `keys` (`<key>:released`). */
  async watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    const channels = keys.map((key) => `${key}:released`);
    if (!this.sharded) return this.listen(channels, listener, false);
    try {
      return await this.listen(channels, listener, true);
    } catch (error) {
      if (!shardedRefused(error)) throw error;
      this.sharded = false;
      return this.listen(channels, listener, false);
    }
  }

  /**
   * Every message published on `channel` (revocations, docs/DESIGN.md §16), on the same connection; never
   * sharded: a revocation channel is not in any one slot.
   */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => void> {
    return this.listen(
      [channel],
      (event, message) => {
        if (event === 'released' && message !== undefined) onMessage(message);
      },
      false,
      BACKGROUND_SUBSCRIBE_TIMEOUT,
    );
  }

  private async listen(
    channels: readonly string[],
    listener: ChannelListener,
    sharded: boolean,
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
      if (idle.length > 0) subscriber.unsubscribe(idle, sharded);
    };
    if (fresh.length > 0) {
      try {
        await withTimeout(
          this.whileOpen(subscriber.subscribe(fresh, sharded)),
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

  /** `pending`, or a rejection as soon as the hub is closed; its listener is removed once either happens. */
  private whileOpen<T>(pending: Promise<T>): Promise<T> {
    const { signal } = this.closing;
    if (signal.aborted) return Promise.reject(new Error('closed by quit()'));
    return new Promise<T>((resolve, reject) => {
      const onClose = () => reject(new Error('closed by quit()'));
      signal.addEventListener('abort', onClose, { once: true });
      pending.then(
        (value) => {
          signal.removeEventListener('abort', onClose);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onClose);
          reject(error);
        },
      );
    });
  }

  close(): Promise<void> {
    this.closing.abort();
    const closing = this.subscriber?.close() ?? Promise.resolve();
    this.subscriber = undefined;
    this.listeners.clear();
    return closing;
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

/**
 * The channels of an ioredis client (or Cluster): its own subscriber connection, a duplicate of it; on a
 * Cluster, release announcements by sharded pub/sub.
 */
export function ioredisChannels(client: Redis): ChannelHub {
  return new ChannelHub((deliver, lost) => ioredisSubscriber(client, deliver, lost), isClusterClient(client));
}

/** Why a Cluster's waiters poll instead of hearing releases: its ioredis has no sharded subscribers. */
const NO_SHARDED_SUBSCRIBERS =
  'this ioredis has no sharded subscribers (the Cluster option shardedSubscribers, ioredis 5.6 or later): ' +
  'waiters poll instead of hearing release announcements';

function ioredisSubscriber(
  client: Redis,
  deliver: (channel: string, message: string) => void,
  lost: () => void,
): SubscriberPort {
  const cluster = isClusterClient(client);
  const subscriber = duplicateSubscriber(client, cluster);
  // A duplicate of a Sentinel-managed client watches the sentinels too: those connections close with it.
  const sentinels = cluster ? undefined : SentinelWatch.of(subscriber);
  // An ioredis without the option ignores it and has no group of sharded subscribers.
  const shardedWorks =
    cluster && (subscriber as { shardedSubscribers?: unknown }).shardedSubscribers !== undefined;
  subscriber.on('error', () => undefined);
  subscriber.on('message', deliver);
  if (shardedWorks) subscriber.on('smessage', deliver);
  subscriber.on('close', lost);
  // The plain channels listened to now, subscribed again on every (re)connection when ioredis does not.
  const listened = new Set<string>();
  if (!cluster)
    subscriber.on('ready', () => {
      if (listened.size > 0) subscriber.subscribe(...listened).catch(() => undefined);
    });
  return {
    subscribe: (channels, sharded) => {
      if (!sharded) {
        for (const channel of channels) listened.add(channel);
        return subscriber.subscribe(...channels);
      }
      if (!shardedWorks) return Promise.reject(new Error(NO_SHARDED_SUBSCRIBERS));
      // One command per channel: SSUBSCRIBE takes channels of one slot only.
      return Promise.all(channels.map((channel) => subscriber.ssubscribe(channel)));
    },
    unsubscribe: (channels, sharded) => {
      // Also while (re)connecting: the offline queue sends it after a SUBSCRIBE still queued (one that timed
      // out under load), which would otherwise leave the channel subscribed on that connection for good.
      if (!sharded) for (const channel of channels) listened.delete(channel);
      if (subscriber.status === 'end') return;
      if (!sharded) subscriber.unsubscribe(...channels).catch(() => undefined);
      else for (const channel of channels) subscriber.sunsubscribe(channel).catch(() => undefined);
    },
    close: async () => {
      ignoreLateSocketErrors(subscriber);
      sentinels?.stop();
      if (subscriber.status !== 'end') subscriber.disconnect();
      await ended(subscriber);
      await sentinels?.close();
    },
  };
}

/** The subscriber connection of `client`: a duplicate with the options a subscriber needs. */
function duplicateSubscriber(client: Redis, cluster: boolean): Redis {
  // Subscriptions are idempotent, so queueing them while connecting (and replaying them after a
  // reconnect) is harmless — unlike lock commands.
  const options = {
    enableOfflineQueue: true,
    lazyConnect: false,
    disconnectTimeout: 200,
    // With a retry limit (inherited from the lock client, 0) a second drop would reject a queued SUBSCRIBE.
    maxRetriesPerRequest: null,
  };
  // A Cluster's duplicate() takes its startup nodes first. Its release announcements go by SPUBLISH to the
  // slot's shard: sharded subscribers (one connection per primary) hear them there; revocations by PUBLISH.
  return cluster
    ? ((client as unknown as { duplicate(nodes: unknown[], options: object): Redis }).duplicate([], {
        enableOfflineQueue: true,
        lazyConnect: false,
        shardedSubscribers: true,
        // Merged into the cluster's own redisOptions: its password, username and tls stay.
        redisOptions: { ...(client as unknown as ClusterLike).options.redisOptions, ...options },
      }) as Redis)
    : // ioredis' own re-SUBSCRIBE after a reconnect runs with nobody awaiting it (a drop during it rejects
      // unhandled) and, dropped mid-way, is not tried again: ioredisSubscriber subscribes again on each 'ready'.
      client.duplicate({ ...options, autoResubscribe: false });
}
