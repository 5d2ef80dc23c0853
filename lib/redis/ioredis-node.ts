import type { Redis } from 'ioredis';
import type {
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  LockNode,
  NodeReading,
  ReleaseListener,
  RevokeRequest,
} from '../core';
import { CommandBatcher } from './command-batcher';
import { quitClient } from './quit-client';
import { waitForReady } from './readiness';
import { isClusterClient, slotOf, tagForSlot } from './cluster-slots';
import { ReleaseChannels } from './release-channels';
import { renewalCalls } from './renewal-batches';
import {
  UnexpectedReplyError,
  acquireReplyOf,
  flagReplyOf,
  flagsReplyOf,
  inspectReplyOf,
  limitReplyOf,
  releaseReplyOf,
  revokeReplyOf,
} from './replies';
import {
  ACQUIRE_SCRIPT,
  EXTEND_MANY_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  INSPECT_SCRIPT,
  LIMIT_SCRIPT,
  REVOKE_SCRIPT,
  LuaScript,
  READ_EXTEND_SCRIPT,
  READ_FENCE_SCRIPT,
  READ_RELEASE_SCRIPT,
  RELEASE_SCRIPT,
  ScriptCall,
  acquireCall,
  extendCall,
  extendManyCall,
  fenceCall,
  limitCall,
  releaseCall,
} from './scripts';

/** The node is not connected, so a command was not sent (rather than queued for a later replay). */
export class NodeNotConnectedError extends Error {
  constructor(status: string) {
    super(notConnected(status));
    this.name = 'NodeNotConnectedError';
  }
}

/** Commands are never queued for later (a replay could land on a restarted node), so say how to get ready. */
function notConnected(status: string): string {
  if (status === 'wait') {
    return (
      'not connected yet (client status "wait": a lazyConnect client never started); await redlock.connect() ' +
      'before locking (RedlockModule connects at start-up)'
    );
  }
  if (status === 'end' || status === 'close')
    return `not connected (client status "${status}": the client was closed)`;
  return (
    `not connected (client status "${status}": its client keeps reconnecting); calls are not queued for later ` +
    '(a replay could land on a restarted node), so they fail until the node is back'
  );
}

/**
 * A {@link LockNode} over an ioredis client: the adapter behind the core's port. Scripts are called by SHA
 * and re-sent in full when the node answers NOSCRIPT (its script cache was flushed or it restarted), so
 * `SCRIPT FLUSH` never breaks locking.
 *
 * Commands are sent only while the client is `ready`. Otherwise ioredis would queue them offline and
 * replay them after reconnecting, possibly onto a restarted node long after the caller gave up.
 */
export class IoredisLockNode implements LockNode {
  readonly name: string;
  /**
   * True for clients the library creates, except while a command re-sent after NOSCRIPT is pending
   * (docs/DESIGN.md §3). Such clients never replay a command after a reconnect, so an answer can only arrive
   * on the connection that carried its command, before the answer to the release sent after it. A client
   * passed in may resend an unanswered acquire after reconnecting, behind a release that could not be sent
   * then, so its late answers are undone separately.
   */
  get ordered(): boolean {
    // A Cluster resends commands after MOVED/ASK redirections: never ordered.
    return this.owned && !this.cluster && !this.commands.reordering;
  }
  /** How the restart guard decides here: `'data-age'` once INFO proved unreadable (ACL, managed services). */
  get guardMode(): 'uptime' | 'data-age' {
    return this.infoDenied ? 'data-age' : 'uptime';
  }
  /** The run_id of the server behind the current connection, once read ('' otherwise). */
  get serverId(): string {
    return this.runId;
  }
  private channels: ReleaseChannels | undefined;
  /** Set by close(): no subscriber connection may be opened after it. */
  private closed = false;
  private runId = '';
  private infoDenied = false;
  private learning: Promise<void> = Promise.resolve();
  private readonly commands: CommandBatcher;
  private readonly onReady = () => this.learnRunId();
  private readonly onClose = () => (this.runId = '');
  /** An ioredis `Cluster`: one lock node whose keys live on the master of their slot. */
  private readonly cluster: boolean;

  /**
   * @param owned the library created the client (offline queue and command replay off, ioredis
   *   auto-pipelining off): concurrent calls are then coalesced into pipelines, the node is
   *   {@link ordered}, and {@link close} quits the client.
   */
  constructor(
    readonly client: Redis,
    name?: string,
    private readonly owned = false,
  ) {
    this.name = name ?? describeClient(client);
    this.cluster = isClusterClient(client);
    // A Cluster pipeline must stay within one slot: calls go out one by one there.
    this.commands = new CommandBatcher(client, owned && !this.cluster);
    // The run_id of the server behind the current connection, for the restart guard's fast path. A new
    // connection (perhaps to a restarted server) forgets it until it has been read again.
    client.on('ready', this.onReady);
    client.on('close', this.onClose);
    if (client.status === 'ready') this.learnRunId();
  }

  private learnRunId(): void {
    this.runId = '';
    // On a Cluster the script runs on its slot's master, whose run_id INFO from here may not be: the script
    // reads it itself (INFO on every guarded acquire), or falls back to the portable marker.
    if (this.cluster) return;
    this.learning = this.client.info('server').then(
      (info) => {
        this.runId = /run_id:(\w+)/.exec(info)?.[1] ?? '';
        // Dragonfly and some proxies answer INFO without a run_id: the precise guard cannot work there.
        this.infoDenied = this.runId === '';
      },
      (error: unknown) => {
        // Denied by ACL (NOPERM), renamed or unsupported: the guard runs in its portable mode.
        if (isRefusal(error)) this.infoDenied = true;
      },
    );
  }

  acquire(request: AcquireRequest): Promise<AcquireReply> {
    const fencing = request.fenceKeys.length > 0;
    return this.run(
      ACQUIRE_SCRIPT,
      acquireCall(request, this.runId, this.infoDenied, this.guardKeyFor(request)),
    ).then((raw) => acquireReplyOf(this.name, raw, fencing));
  }

  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
    readers?: readonly string[],
  ): Promise<boolean> {
    const call = readers
      ? this.run(READ_FENCE_SCRIPT, fenceCall(readers, fenceKeys, owner, token))
      : this.run(FENCE_SCRIPT, fenceCall(keys, fenceKeys, owner, token));
    return call.then((raw) => flagReplyOf(this.name, 'the fence script', raw));
  }

  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): Promise<boolean> {
    const call = readers
      ? this.run(READ_EXTEND_SCRIPT, extendCall(readers, owner, ttl))
      : this.run(EXTEND_SCRIPT, extendCall(keys, owner, ttl));
    return call.then((raw) => flagReplyOf(this.name, 'the extend script', raw));
  }

  /**
   * Batched renewal: one EXTEND_MANY call per slot (Cluster) and per {@link LOCKS_PER_CALL} locks; a call that
   * fails is an Error for its locks only. Rejects when every call failed (the node could not be asked).
   */
  extendMany(items: readonly ExtendItem[]): Promise<(boolean | Error)[]> {
    if (items.length === 0) return Promise.resolve([]);
    const flags: (boolean | Error)[] = new Array(items.length);
    const calls = renewalCalls(items, this.cluster);
    let failed = 0;
    let firstError: unknown;
    const sent = calls.map((call) =>
      this.run(EXTEND_MANY_SCRIPT, extendManyCall(call.map((i) => items[i])))
        .then((raw) => flagsReplyOf(this.name, raw, call.length))
        .then(
          (answered) => {
            for (let k = 0; k < call.length; k++) flags[call[k]] = answered[k];
          },
          (error: unknown) => {
            failed++;
            firstError ??= error;
            const cause = error instanceof Error ? error : new Error(String(error));
            for (const i of call) flags[i] = cause;
          },
        ),
    );
    return Promise.all(sent).then(() => {
      if (failed === calls.length) throw firstError;
      return flags;
    });
  }

  release(keys: readonly string[], owner: string, readers?: readonly string[]): Promise<number> {
    if (readers) {
      return this.run(READ_RELEASE_SCRIPT, releaseCall([...keys, ...readers], owner)).then((raw) =>
        releaseReplyOf(this.name, raw, keys.length),
      );
    }
    return this.run(RELEASE_SCRIPT, releaseCall(keys, owner)).then((raw) =>
      releaseReplyOf(this.name, raw, keys.length),
    );
  }

  limit(key: string, permits: number, ttl: number): Promise<number> {
    return this.run(LIMIT_SCRIPT, limitCall(key, permits, ttl)).then((raw) => limitReplyOf(this.name, raw));
  }

  /**
   * On a Cluster, a multi-resource lock whose keys hash to different slots cannot run in one script there:
   * refused before any traffic.
   */
  refuseKeys(keys: readonly string[]): string | undefined {
    if (!this.cluster || keys.length < 2) return undefined;
    const slots = new Set(keys.map(slotOf));
    return slots.size > 1 ? clusterCrossSlot(this.name, keys, [...slots]) : undefined;
  }

  /** The guard markers' key: on a Cluster, tagged to live in the lock's slot (one marker pair per slot). */
  private guardKeyFor(request: AcquireRequest): string {
    if (!this.cluster) return request.guardKey;
    return `${request.guardKey}{${tagForSlot(slotOf(request.keys[0]))}}`;
  }

  async probe(): Promise<number | undefined> {
    const status = this.client.status;
    if (status !== 'ready') throw new NodeNotConnectedError(status);
    if (this.infoDenied || this.cluster) {
      await this.client.ping();
      return undefined;
    }
    const info = await this.client.info('server');
    const seconds = /uptime_in_seconds:(\d{1,12})\r?\n/.exec(info)?.[1];
    if (seconds === undefined) {
      throw new UnexpectedReplyError(this.name, 'INFO server', info, 'no uptime_in_seconds in it');
    }
    // A lower bound, as in the acquire script: the reported whole seconds can exceed the real uptime by one.
    return Math.max(0, Number(seconds) - 1) * 1000;
  }

  inspect(keys: readonly string[]): Promise<NodeReading> {
    return this.run(INSPECT_SCRIPT, { keys, args: [] }).then((raw) =>
      inspectReplyOf(this.name, raw, keys.length),
    );
  }

  revoke(request: RevokeRequest): Promise<number> {
    const { keys, lockKeys, channel, message } = request;
    return this.run(REVOKE_SCRIPT, { keys, args: [channel, lockKeys, message] }).then((raw) =>
      revokeReplyOf(this.name, raw, keys.length),
    );
  }

  /** SCAN (on every primary of a Cluster) until `limit` keys match or the scan is done. */
  async scanKeys(pattern: string, limit: number): Promise<string[]> {
    const status = this.client.status;
    if (status !== 'ready') throw new NodeNotConnectedError(status);
    const servers = isClusterClient(this.client)
      ? (this.client as unknown as { nodes(role: 'master'): Redis[] }).nodes('master')
      : [this.client];
    const found = new Set<string>();
    for (const server of servers) {
      let cursor = '0';
      do {
        const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
        for (const key of keys) if (found.size < limit) found.add(key);
        cursor = next;
      } while (cursor !== '0' && found.size < limit);
      if (found.size >= limit) break;
    }
    return [...found];
  }

  subscribeToChannel(channel: string, onMessage: (message: string) => void): Promise<() => void> {
    if (this.closed)
      return Promise.reject(new Error(`${this.name}: closed by quit(), no more subscriptions`));
    this.channels ??= new ReleaseChannels(this.client);
    return this.channels.subscribe(channel, onMessage);
  }

  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    if (this.closed)
      return Promise.reject(new Error(`${this.name}: closed by quit(), no more subscriptions`));
    this.channels ??= new ReleaseChannels(this.client);
    return this.channels.watch(keys, listener);
  }

  /** Ready, and the guard mode learnt (INFO read or found unreadable). */
  async connect(timeout: number): Promise<void> {
    await waitForReady(this.client, timeout);
    await this.learning;
  }

  /** Closes the subscriber connection, if one was opened, and — for a client the library created — the client. */
  async close(timeout: number): Promise<void> {
    this.closed = true;
    this.channels?.close();
    this.channels = undefined;
    this.client.off('ready', this.onReady);
    this.client.off('close', this.onClose);
    if (this.owned) await quitClient(this.client, timeout);
  }

  /** Rejects (never throws) when the client is not ready, so callers can rely on a promise. */
  private run(script: LuaScript, call: ScriptCall): Promise<unknown> {
    const status = this.client.status;
    if (status !== 'ready') return Promise.reject(new NodeNotConnectedError(status));
    return this.commands.call(script, call.keys, call.args);
  }
}

/** Keys a SCAN call looks at (a hint to the server): large enough to page quickly, small enough not to block it. */
const SCAN_COUNT = 500;

function clusterCrossSlot(node: string, keys: readonly string[], slots: number[]): string {
  return (
    `${node} is a Redis Cluster, where one script can only touch keys of one slot, and these lock keys hash ` +
    `to ${slots.length} slots (${slots.join(', ')}): ${keys.slice(0, 5).join(', ')}. Each resource is the ` +
    `key's hash tag ({resource}), so resources only share a slot by chance: lock them one at a time (in a ` +
    `fixed order), or use independent Redis servers as nodes.`
  );
}

/** A server's refusal to run a command (as opposed to a lost connection). */
function isRefusal(error: unknown): boolean {
  return error instanceof Error && /^(NOPERM|ERR|NOAUTH)/.test(error.message);
}

/** `host:port` of an ioredis client, for messages and duplicate detection. */
export function describeClient(client: Redis): string {
  const startup = (client as { startupNodes?: { host?: string; port?: number }[] }).startupNodes;
  if (isClusterClient(client) && Array.isArray(startup)) {
    return `cluster ${startup.map((n) => `${n.host ?? '127.0.0.1'}:${n.port ?? 6379}`).join(',')}`;
  }
  const options = client.options ?? {};
  if (options.path) return options.path;
  // Behind Sentinel the address changes with failovers: the group name and its sentinels identify it.
  if (options.sentinels && options.sentinels.length > 0) {
    const sentinels = options.sentinels.map((s) => `${s.host ?? '127.0.0.1'}:${s.port ?? 26379}`).join(',');
    return `sentinel ${options.name ?? 'mymaster'}@${sentinels}`;
  }
  return `${options.host ?? '127.0.0.1'}:${options.port ?? 6379}`;
}
