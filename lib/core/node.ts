import type { Redis } from 'ioredis';
import { ACQUIRE_SCRIPT, EXTEND_SCRIPT, FENCE_SCRIPT, LuaScript, RELEASE_SCRIPT } from './scripts';
import { CommandBatcher } from './command-batcher';
import { ReleaseChannels, ReleaseListener } from './release-channels';

/** What an acquire request asks of one node. */
export interface AcquireRequest {
  /** The lock keys, one per resource. */
  readonly keys: readonly string[];
  /** With fencing: the fence counter keys, aligned with `keys`; otherwise empty. */
  readonly fenceKeys: readonly string[];
  readonly owner: string;
  readonly ttl: number;
  /** Refuse while the node has been up for less than this many ms (0 = no restart guard). */
  readonly guardWindow: number;
  /** The key where a node records the run_id it was last checked under (see the acquire script). */
  readonly guardKey: string;
}

/** What a node answered to an acquire request. */
export type AcquireReply =
  /** Every key is now held by the owner; `token` is the raised fence counter (0 without fencing). */
  | { readonly outcome: 'acquired'; readonly token: number }
  /** Another owner holds a key for `holderTtl` more ms (−1: no expiry, −2: just vanished). */
  | { readonly outcome: 'busy'; readonly holderTtl: number }
  /** The node restarted `uptime` ms ago, within the restart-guard window, and refused. */
  | { readonly outcome: 'refused'; readonly uptime: number };

/**
 * One independent Redis node as the algorithm sees it. The core reaches Redis only through this interface,
 * so a simulation can stand in virtual nodes. Each method applies the guarantees of the matching Lua script
 * in `scripts.ts` atomically on the node, and rejects when the node cannot be asked.
 */
export interface LockNode {
  /** A stable, human-readable name used in messages (for Redis: `host:port`). */
  readonly name: string;
  /**
   * Optional: true when this node runs commands in the order they were sent and answers in that order (one
   * TCP connection). A release sent after an acquire then always undoes it, so an acquire answer that
   * arrives after its lock was released or given up needs no separate undo.
   */
  readonly ordered?: boolean;
  acquire(request: AcquireRequest): Promise<AcquireReply>;
  /** Raises the fence counters to `token` if the owner still holds every key; resolves whether it did. */
  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
  ): Promise<boolean>;
  /** Resolves true when every key was still held by `owner` and now has the new ttl. */
  extend(keys: readonly string[], owner: string, ttl: number): Promise<boolean>;
  /** Resolves the number of keys deleted (only keys held by `owner` are deleted). */
  release(keys: readonly string[], owner: string): Promise<number>;
  /**
   * Optional: calls `listener('released')` when one of `keys` is released on this node, and
   * `listener('lost')` when announcements may have been missed (connection lost). Resolves an unsubscribe
   * function once the subscription is active, or rejects when it cannot be made (waiters then poll).
   */
  watch?(keys: readonly string[], listener: ReleaseListener): Promise<() => void>;
  /** Optional, for health checks: resolves a lower bound of the node's uptime in ms (rejects when it cannot be asked). */
  probe?(): Promise<number>;
}

/** The node is not connected, so a command was not sent (rather than queued for a later replay). */
export class NodeNotConnectedError extends Error {
  constructor(status: string) {
    super(`not connected (client status "${status}")`);
    this.name = 'NodeNotConnectedError';
  }
}

/**
 * A {@link LockNode} over an ioredis client. Scripts are called by SHA and re-sent in full when the node
 * answers NOSCRIPT (its script cache was flushed or it restarted), so `SCRIPT FLUSH` never breaks locking.
 *
 * Commands are sent only while the client is `ready`. Otherwise ioredis would queue them offline and
 * replay them after reconnecting, possibly onto a restarted node long after the caller gave up.
 */
export class IoredisLockNode implements LockNode {
  readonly name: string;
  /**
   * True for clients the library creates, except while a command re-sent after NOSCRIPT is pending. Such
   * clients never replay a command after a reconnect, so an answer can only arrive on the connection that
   * carried its command, before the answer to the release sent after it (a release is only sent while the
   * connection is ready, and always in full, so it is never re-sent). A client passed in may resend an
   * unanswered acquire after reconnecting, behind a release that could not be sent then, so its late answers
   * are undone separately.
   */
  get ordered(): boolean {
    return this.owned && !this.commands.reordering;
  }
  private channels: ReleaseChannels | undefined;
  private runId = '';

  private readonly commands: CommandBatcher;

  /**
   * @param owned the library created the client (offline queue and command replay off, ioredis
   *   auto-pipelining off): concurrent calls are then coalesced into pipelines, and the node is
   *   {@link ordered}. A client passed in keeps its own settings.
   */
  constructor(
    readonly client: Redis,
    name?: string,
    private readonly owned = false,
  ) {
    this.name = name ?? describeClient(client);
    this.commands = new CommandBatcher(client, owned);
    // The run_id of the server behind the current connection, for the restart guard's fast path. A new
    // connection (perhaps to a restarted server) forgets it until it has been read again.
    client.on('ready', () => this.learnRunId());
    client.on('close', () => (this.runId = ''));
    if (client.status === 'ready') this.learnRunId();
  }

  private learnRunId(): void {
    this.runId = '';
    this.client.info('server').then(
      (info) => (this.runId = /run_id:(\w+)/.exec(info)?.[1] ?? ''),
      () => undefined,
    );
  }

  acquire(request: AcquireRequest): Promise<AcquireReply> {
    const { keys, fenceKeys } = request;
    const fencing = fenceKeys.length > 0;
    return this.run(
      ACQUIRE_SCRIPT,
      fencing ? [...keys, ...fenceKeys] : keys,
      request.owner,
      request.ttl,
      keys.length,
      request.guardWindow,
      fencing ? 1 : 0,
      this.runId,
      request.guardKey,
    ).then(acquireReplyOf);
  }

  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
  ): Promise<boolean> {
    return this.run(FENCE_SCRIPT, [...keys, ...fenceKeys], owner, String(token)).then(isOne);
  }

  extend(keys: readonly string[], owner: string, ttl: number): Promise<boolean> {
    return this.run(EXTEND_SCRIPT, keys, owner, ttl).then(isOne);
  }

  release(keys: readonly string[], owner: string): Promise<number> {
    return this.run(RELEASE_SCRIPT, keys, owner).then(Number);
  }

  async probe(): Promise<number> {
    const status = this.client.status;
    if (status !== 'ready') throw new NodeNotConnectedError(status);
    const info = await this.client.info('server');
    // A lower bound, as in the acquire script: the reported whole seconds can exceed the real uptime by one.
    return Math.max(0, Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? NaN) - 1) * 1000;
  }

  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    this.channels ??= new ReleaseChannels(this.client);
    return this.channels.watch(keys, listener);
  }

  /** Closes the subscriber connection, if one was opened. */
  close(): void {
    this.channels?.close();
    this.channels = undefined;
  }

  /** Rejects (never throws) when the client is not ready, so callers can rely on a promise. */
  private run(script: LuaScript, keys: readonly string[], ...args: (string | number)[]): Promise<unknown> {
    const status = this.client.status;
    if (status !== 'ready') return Promise.reject(new NodeNotConnectedError(status));
    return this.commands.call(script, keys, args);
  }
}

const ACQUIRED_UNFENCED: AcquireReply = Object.freeze({ outcome: 'acquired', token: 0 });

function acquireReplyOf(raw: unknown): AcquireReply {
  if (raw === 1) return ACQUIRED_UNFENCED;
  const reply = raw as [number, number | string];
  const code = reply[0];
  if (code === 1) return { outcome: 'acquired', token: Number(reply[1]) };
  if (code === 0) return { outcome: 'busy', holderTtl: Number(reply[1]) };
  return { outcome: 'refused', uptime: Number(reply[1]) };
}

function isOne(reply: unknown): boolean {
  return reply === 1;
}

/** `host:port` of an ioredis client, for messages and duplicate detection. */
export function describeClient(client: Redis): string {
  const options = client.options ?? {};
  if (options.path) return options.path;
  return `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}
