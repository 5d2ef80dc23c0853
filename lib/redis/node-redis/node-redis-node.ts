import { withTimeout } from '../../core';
import {
  ended,
  explainClusterReply,
  ChannelHub,
  SubscriberPort,
  NodeChannels,
  ScanTarget,
  ScriptLockNode,
} from '../script-node';
import { type LuaScript, type ScriptCall, firstCallOf } from '../scripts';
import {
  NodeRedisSentinelLike,
  describeSentinel,
  isNodeRedisSentinel,
  sentinelAsClient,
} from './node-redis-sentinel';
import type { NodeRedisClientLike, NodeRedisClusterLike } from './node-redis-client';

/**
 * A node-redis client, cluster or sentinel (duck-typed: `isOpen` and `sendCommand`, which ioredis clients
 * lack).
 */
export function isNodeRedisClient(
  value: object,
): value is NodeRedisClientLike | NodeRedisClusterLike | NodeRedisSentinelLike {
  const candidate = value as Partial<NodeRedisClientLike>;
  return typeof candidate.isOpen === 'boolean' && typeof candidate.sendCommand === 'function';
}

function isNodeRedisCluster(value: object): value is NodeRedisClusterLike {
  const candidate = value as Partial<NodeRedisClusterLike>;
  return Array.isArray(candidate.masters) && typeof candidate.nodeClient === 'function';
}

/** The node-redis client is not connected, so a command was not sent (rather than queued for a replay). */
export class NodeRedisNotConnectedError extends Error {
  constructor(name: string) {
    super(
      `${name}: not connected (node-redis client not ready); calls are not queued for later (a replay could ` +
        'land on a restarted node), so they fail until it is back. Connect the client (await client.connect()) ' +
        'or await redlock.connect() before locking (RedlockModule connects at start-up).',
    );
    this.name = 'NodeRedisNotConnectedError';
  }
}

/**
 * A {@link LockNode} over a node-redis client, cluster or sentinel (its current primary) passed in by the application (docs/DESIGN.md §3, §8).
 * Scripts go by SHA (`EVALSHA`) after their first call on the client (in full), and are re-sent in full after NOSCRIPT; node-redis writes the commands of one
 * event-loop turn together, so no batcher of ours is needed. Commands are sent only while the client is
 * ready: one issued while reconnecting would wait in node-redis' offline queue and be replayed onto a server
 * that may have restarted. node-redis never re-sends a command it had written, but a command issued just
 * before a disconnect may still be written after the reconnect, so the node is not {@link ordered}: its late
 * answers are undone (docs/DESIGN.md §3). The client stays the application's: `close()` leaves it open.
 */
export class NodeRedisLockNode extends ScriptLockNode {
  readonly name: string;
  readonly ordered = false;
  private readonly onReady = () => {
    this.readySeen = true;
    this.learnRunId();
  };
  /** A 'ready' event came: node-redis 5's sentinel emits none (no 'ready', 'reconnecting' or 'end'). */
  private readySeen = false;
  private readonly onGone = () => this.forgetRunId();

  /**
   * @param owned the library created the client (`client: 'node-redis'`, offline queue off): {@link close}
   *   closes it.
   */
  /** The client (a sentinel is seen through {@link sentinelAsClient}). */
  readonly client: NodeRedisClientLike | NodeRedisClusterLike;
  /** The node is a sentinel's primary: its name is not a `host:port` to explain cluster replies with. */
  private readonly sentinel: boolean;

  constructor(
    client: NodeRedisClientLike | NodeRedisClusterLike | NodeRedisSentinelLike,
    name?: string,
    private readonly owned = false,
  ) {
    super(isNodeRedisCluster(client));
    this.sentinel = isNodeRedisSentinel(client);
    this.client = isNodeRedisSentinel(client) ? sentinelAsClient(client) : client;
    this.name = name ?? (isNodeRedisSentinel(client) ? describeSentinel(client) : describeNodeRedis(client));
    this.client.on('ready', this.onReady);
    this.client.on('reconnecting', this.onGone);
    this.client.on('end', this.onGone);
    if (this.isReady()) this.learnRunId();
  }

  private isReady(): boolean {
    // A cluster has no isReady: it is ready once open (each shard's client reconnects by itself).
    return this.cluster ? this.client.isOpen : this.client.isReady === true;
  }

  /** The scripts (by SHA) already sent in full on this client ({@link firstCallOf}). */
  private readonly sentInFull = new Set<string>();

  /** One command on the wire: on a cluster, routed to the primary of `firstKey`'s slot. */
  private send(args: string[], firstKey: string | undefined): Promise<unknown> {
    try {
      return this.cluster
        ? (this.client as NodeRedisClusterLike).sendCommand(firstKey, false, args)
        : (this.client as NodeRedisClientLike).sendCommand(args);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  protected run(script: LuaScript, call: ScriptCall): Promise<unknown> {
    if (!this.isReady()) return Promise.reject(new NodeRedisNotConnectedError(this.name));
    // node-redis takes only strings (a number is a TypeError).
    const rest = [String(call.keys.length), ...call.keys, ...call.args.map(String)];
    const firstKey = call.keys[0];
    const inFull = () =>
      this.send(['EVAL', script.source, ...rest], firstKey).catch((error: unknown) => {
        throw this.explained(error);
      });
    if (firstCallOf(this.sentInFull, script)) return inFull();
    return this.send(['EVALSHA', script.sha, ...rest], firstKey).catch((error: unknown) => {
      if (!(error instanceof Error && error.message.startsWith('NOSCRIPT'))) throw this.explained(error);
      return inFull();
    });
  }

  /** A plain client's cluster replies (MOVED, CROSSSLOT, ...) say that the node is a cluster member. */
  private explained(error: unknown): unknown {
    if (this.cluster || this.sentinel) return error;
    const [host, port] = this.name.split(':');
    return explainClusterReply({ host, port: Number(port) }, error, 'node-redis');
  }

  protected info(): Promise<string> {
    if (!this.isReady()) return Promise.reject(new NodeRedisNotConnectedError(this.name));
    return this.send(['INFO', 'server'], undefined).then(String);
  }

  protected async ping(): Promise<void> {
    if (!this.isReady()) throw new NodeRedisNotConnectedError(this.name);
    await this.send(['PING'], undefined);
  }

  protected async scanTargets(): Promise<readonly ScanTarget[]> {
    if (!this.isReady()) throw new NodeRedisNotConnectedError(this.name);
    const servers = this.cluster
      ? await Promise.all(
          (this.client as NodeRedisClusterLike).masters.map((master) =>
            (this.client as NodeRedisClusterLike).nodeClient(master),
          ),
        )
      : [this.client as NodeRedisClientLike];
    return servers.map((server) => ({
      scan: async (cursor: string, pattern: string, count: number) => {
        const reply = await server.sendCommand(['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(count)]);
        const [next, keys] = reply as [unknown, unknown];
        return [String(next), Array.isArray(keys) ? keys.map(String) : []] as const;
      },
    }));
  }

  protected openChannels(): NodeChannels {
    return new ChannelHub((deliver, lost) => nodeRedisSubscriber(this.client, deliver, lost), this.cluster);
  }

  /**
   * Ready, and the guard mode learnt. A client that was never connected is connected here (as the ioredis
   * adapter starts a lazy client); one that is reconnecting is waited for.
   */
  async connect(timeout: number): Promise<void> {
    if (!this.isReady()) {
      await withTimeout(
        new Promise<void>((resolve, reject) => {
          const ready = () => {
            this.client.removeListener('ready', ready);
            resolve();
          };
          this.client.on('ready', ready);
          if (!this.client.isOpen) {
            this.client.connect().then(
              () => {
                this.client.removeListener('ready', ready);
                resolve();
              },
              (error: unknown) => {
                this.client.removeListener('ready', ready);
                reject(error);
              },
            );
          }
        }),
        timeout,
        () => new NodeRedisNotConnectedError(`${this.name} (after ${timeout} ms)`),
      );
      // The 'ready' listener (constructor) has started reading the run_id: `learning` waits for it.
      if (!this.readySeen) this.learnRunId();
    }
    await this.learning;
  }

  /**
   * Closes the subscriber this node opened; the application's client stays open (it is not ours), a client
   * the library created is closed — gracefully when the node answers within `timeout` ms.
   */
  async close(timeout = 0): Promise<void> {
    const channels = this.closeChannels();
    this.client.removeListener('ready', this.onReady);
    this.client.removeListener('reconnecting', this.onGone);
    this.client.removeListener('end', this.onGone);
    if (!this.owned || !this.client.isOpen) return channels;
    const { client } = this;
    const graceful = this.isReady() ? (client.close ?? client.quit)?.call(client) : undefined;
    if (graceful)
      await withTimeout(graceful, timeout, () => new Error('QUIT not answered')).catch(() => undefined);
    if (client.isOpen) {
      if (typeof client.destroy === 'function') client.destroy();
      else await client.disconnect?.().catch(() => undefined);
    }
    await channels;
  }
}

/**
 * A subscriber connection duplicated from the node's client (its address, credentials and TLS). node-redis
 * subscribes again by itself after a reconnect; the listeners are told `'lost'` when the connection drops.
 */
function nodeRedisSubscriber(
  client: NodeRedisClientLike | NodeRedisClusterLike,
  deliver: (channel: string, message: string) => void,
  lost: () => void,
): SubscriberPort {
  // Subscriptions may wait for the connection (idempotent, unlike lock commands).
  const subscriber = client.duplicate({ disableOfflineQueue: false });
  subscriber.on('error', () => undefined);
  subscriber.on('reconnecting', lost);
  const connected = subscriber.connect();
  connected.catch(() => undefined);
  const listener = (message: string, channel: string) => deliver(channel, message);
  let closed = false;
  // node-redis keeps the subscribed channels on the client: a SUBSCRIBE issued while the UNSUBSCRIBE of the
  // same channel is in flight is taken as already done and then dropped with it. Wait for it first.
  const leaving = new Map<string, Promise<unknown>>();
  // A cluster's release announcements come by sharded pub/sub (see ChannelHub), each on its slot's primary.
  const sharded = subscriber as Partial<Pick<NodeRedisClusterLike, 'sSubscribe' | 'sUnsubscribe'>>;
  return {
    subscribe: async (channels, inShards) => {
      await connected;
      await Promise.all(channels.map((channel) => leaving.get(channel)));
      if (!inShards) await subscriber.subscribe([...channels], listener);
      else if (!sharded.sSubscribe)
        throw new Error('this node-redis has no sSubscribe (node-redis 4.6 or later)');
      // One command per channel: SSUBSCRIBE takes channels of one slot only.
      else
        await Promise.all(
          channels.map((channel) => sharded.sSubscribe!.call(subscriber, [channel], listener)),
        );
    },
    unsubscribe: (channels, inShards) => {
      if (closed) return;
      const left = (
        inShards && sharded.sUnsubscribe
          ? Promise.all(channels.map((channel) => sharded.sUnsubscribe!.call(subscriber, [channel])))
          : subscriber.unsubscribe([...channels])
      ).catch(() => undefined);
      for (const channel of channels) {
        leaving.set(channel, left);
        void left.then(() => {
          if (leaving.get(channel) === left) leaving.delete(channel);
        });
      }
    },
    close: () => {
      closed = true;
      if (typeof subscriber.destroy === 'function') subscriber.destroy();
      else subscriber.disconnect?.().catch(() => undefined);
      return ended(subscriber);
    },
  };
}

/** `host:port` of a node-redis client (from its url or socket options), or a cluster's primaries. */
function describeNodeRedis(client: NodeRedisClientLike | NodeRedisClusterLike): string {
  if (isNodeRedisCluster(client)) {
    const masters = client.masters.map((m) => m.address ?? `${m.host}:${m.port}`);
    return `node-redis cluster ${masters.join(',') || '(not connected)'}`;
  }
  const { url, socket } = client.options ?? {};
  if (socket?.path) return socket.path;
  if (url) {
    try {
      const parsed = new URL(url);
      return `${parsed.hostname || '127.0.0.1'}:${parsed.port || 6379}`;
    } catch {
      // An unparsable url: node-redis refuses it at connect time anyway.
    }
  }
  return `${socket?.host ?? '127.0.0.1'}:${socket?.port ?? 6379}`;
}
