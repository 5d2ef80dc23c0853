import type {
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  LockNode,
  NodeReading,
  PermitsReading,
  ReleaseListener,
  RevokeRequest,
} from '../../core';
import { slotOf, tagForSlot } from './cluster-slots';
import { renewalScriptCalls } from './renewal-batches';
import {
  UnexpectedReplyError,
  READ_PERMITS_SCRIPT,
  readPermitsCall,
  readPermitsReplyOf,
  acquireReplyOf,
  flagReplyOf,
  inspectReplyOf,
  limitReplyOf,
  releaseReplyOf,
  revokeReplyOf,
  ACQUIRE_SCRIPT,
  EXTEND_SCRIPT,
  FENCE_SCRIPT,
  INSPECT_SCRIPT,
  LIMIT_SCRIPT,
  LuaScript,
  READ_EXTEND_SCRIPT,
  READ_FENCE_SCRIPT,
  READ_RELEASE_SCRIPT,
  RELEASE_SCRIPT,
  REVOKE_SCRIPT,
  ScriptCall,
  acquireCall,
  ACQUIRE_NEEDS_SINCE,
  extendCall,
  fenceCall,
  limitCall,
  releaseCall,
  CLEAR_INTENT_SCRIPT,
  clearIntentCall,
  clearIntentReplyOf,
  revokeCall,
} from '../scripts';

/** One server a scan pages through (a Cluster has one per primary). */
export interface ScanTarget {
  /** SCAN `cursor` MATCH `pattern` COUNT `count`: the next cursor and the keys of this page. */
  scan(cursor: string, pattern: string, count: number): Promise<readonly [string, readonly string[]]>;
}

/** Where a node's subscriptions go: release announcements and the revocation channel. */
export interface NodeChannels {
  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void>;
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => void>;
  /** Resolves once the subscriber connection ended. */
  close(): Promise<void>;
}

/** Keys a SCAN call looks at (a hint to the server): large enough to page quickly, small enough not to block it. */
const SCAN_COUNT = 500;

/**
 * What every Redis client adapter shares behind the core's port (docs/DESIGN.md §0): the scripts and their
 * replies, the restart guard's run_id, the batched renewal's calls, Cluster slot rules, scanning and
 * subscriptions. A client kind supplies how a script call goes on the wire ({@link run}, never queued for a
 * later replay), INFO, its scan targets, its subscriber and how to connect and close.
 */
export abstract class ScriptLockNode implements LockNode {
  abstract readonly name: string;
  /** @internal Every reply is parsed and checked here (scripts/), so the core need not check it again. */
  readonly repliesChecked = true;
  /** How the restart guard decides here: `'data-age'` once INFO proved unreadable (ACL, managed services). */
  get guardMode(): 'uptime' | 'data-age' {
    return this.infoDenied ? 'data-age' : 'uptime';
  }
  /** The run_id of the server behind the current connection, once read ('' otherwise). */
  get serverId(): string {
    return this.runId;
  }
  private runId = '';
  /** The restart guard's last answer here needed the data-age marker: acquire calls name it (`{7}` otherwise). */
  private guardSlowPath = false;
  /**
   * `{7}` answers since the run_id was last learnt. A second one, after a grant that wrote the boot marker,
   * means the marker never names the run_id this node holds (a failover it was not told of: node-redis 5's
   * sentinel): every call names the data-age marker from then on, rather than every call being sent twice.
   */
  private sinceAsked = 0;
  /** A lower bound of the server's uptime when {@link runId} was read, in ms (0 if unknown). */
  private runUptime = 0;
  private infoDenied = false;
  /** Resolves once the run_id of the current connection was read (or found unreadable). */
  protected learning: Promise<void> = Promise.resolve();
  /** Set by close(): no subscriber connection may be opened after it. */
  protected closed = false;
  private channelsOpened: NodeChannels | undefined;

  /** @param cluster the client is a whole Redis Cluster: one lock node whose keys live on their slot's primary. */
  constructor(protected readonly cluster: boolean) {}

  /** Sends one script call (EVALSHA, EVAL after NOSCRIPT); rejects, never queues, when not connected. */
  protected abstract run(script: LuaScript, call: ScriptCall): Promise<unknown>;
  /**
   * {@link run}, for a call the core sends together with others (a semaphore's read and its attempt, §14): an
   * adapter that can may put them on the wire in one write.
   */
  protected runWithTurn(script: LuaScript, call: ScriptCall): Promise<unknown> {
    return this.run(script, call);
  }
  /** INFO server of the server behind the connection (not called for a Cluster). */
  protected abstract info(): Promise<string>;
  /** Rejects when the client cannot be asked now; resolves once it answered a PING. */
  protected abstract ping(): Promise<void>;
  /** The servers a scan pages through; rejects when the client is not connected. */
  protected abstract scanTargets(): Promise<readonly ScanTarget[]>;
  /** A subscriber for this node's channels, opened on first use. */
  protected abstract openChannels(): NodeChannels;
  abstract connect(timeout: number): Promise<void>;
  abstract close(timeout: number): Promise<void>;

  /** Call on each new connection: its server may have restarted, so its run_id is read again. */
  protected learnRunId(): void {
    this.forgetRunId();
    // On a Cluster the script runs on its slot's master, whose run_id INFO from here may not be: the script
    // reads it itself (INFO on every guarded acquire), or falls back to the portable marker.
    if (this.cluster) return;
    this.learning = this.info().then(
      (info) => {
        this.runId = /run_id:(\w+)/.exec(info)?.[1] ?? '';
        // Whole wall-clock seconds: one taken off for a lower bound, as the script does (docs/DESIGN.md §6).
        const seconds = Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? 0);
        this.runUptime = this.runId === '' ? 0 : Math.max(0, seconds - 1) * 1000;
        // Dragonfly and some proxies answer INFO without a run_id: the precise guard cannot work there.
        this.infoDenied = this.runId === '';
      },
      (error: unknown) => {
        // Denied by ACL (NOPERM), renamed or unsupported: the guard runs in its portable mode.
        if (isRefusal(error)) this.infoDenied = true;
      },
    );
  }

  /** Call when the connection closed: the next one may reach another (restarted) server. */
  protected forgetRunId(): void {
    this.runId = '';
    this.runUptime = 0;
    this.sinceAsked = 0;
  }

  acquire(request: AcquireRequest): Promise<AcquireReply> {
    const fencing = request.fenceKeys.length > 0;
    const sinceKey = this.guardSlowPath || this.sinceAsked > 1;
    const call = acquireCall(
      request,
      this.runId,
      this.infoDenied,
      this.guardKeyFor(request),
      this.runUptime,
      sinceKey,
    );
    return this.run(ACQUIRE_SCRIPT, call).then((raw) => {
      if (!sinceKey && needsSince(raw)) {
        // The guard's slow path (a new server, a marker gone): its calls name the data-age marker until a grant.
        this.guardSlowPath = true;
        this.sinceAsked++;
        return this.acquire(request);
      }
      const reply = acquireReplyOf(this.name, raw, fencing);
      if (reply.outcome === 'acquired') this.guardSlowPath = false;
      return reply;
    });
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
    // Built once for the batch, shared with the batch's other nodes.
    const calls = renewalScriptCalls(items, this.cluster);
    let failed = 0;
    let firstError: unknown;
    const sent = calls.map(({ indexes, script, call, flagsOf }) =>
      this.run(script, call)
        .then((raw) => flagsOf(this.name, raw))
        .then(
          (answered) => {
            for (let k = 0; k < indexes.length; k++) flags[indexes[k]] = answered[k];
          },
          (error: unknown) => {
            failed++;
            firstError ??= error;
            const cause = error instanceof Error ? error : new Error(String(error));
            for (const i of indexes) flags[i] = cause;
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
      return this.run(READ_RELEASE_SCRIPT, releaseCall([...keys, ...readers], owner, this.cluster)).then(
        (raw) => releaseReplyOf(this.name, raw, keys.length),
      );
    }
    return this.run(RELEASE_SCRIPT, releaseCall(keys, owner, this.cluster)).then((raw) =>
      releaseReplyOf(this.name, raw, keys.length),
    );
  }

  clearIntent(intentKeys: readonly string[], intent: string, queueKeys?: readonly string[]): Promise<number> {
    const call = clearIntentCall(intentKeys, intent, this.cluster, queueKeys);
    const most = intentKeys.length + (queueKeys ? queueKeys.length / 3 : 0);
    return this.run(CLEAR_INTENT_SCRIPT, call).then((raw) => clearIntentReplyOf(this.name, raw, most));
  }

  limit(key: string, permits: number, ttl: number): Promise<number> {
    return this.run(LIMIT_SCRIPT, limitCall(key, permits, ttl)).then((raw) => limitReplyOf(this.name, raw));
  }

  readPermits(
    key: string,
    permitKeys: readonly string[],
    permits: number,
    ttl: number,
    next?: number,
  ): Promise<PermitsReading> {
    const call = readPermitsCall(key, permitKeys, permits, ttl, next);
    return this.runWithTurn(READ_PERMITS_SCRIPT, call).then((raw) =>
      readPermitsReplyOf(this.name, raw, permitKeys.length, next !== undefined),
    );
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
    if (this.infoDenied || this.cluster) {
      await this.ping();
      return undefined;
    }
    const info = await this.info();
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
    return this.run(REVOKE_SCRIPT, revokeCall(request, this.cluster)).then((raw) =>
      revokeReplyOf(this.name, raw, request.keys.length),
    );
  }

  /** SCAN (on every primary of a Cluster) until `limit` keys match or the scan is done. */
  async scanKeys(pattern: string, limit: number): Promise<string[]> {
    const found = new Set<string>();
    for (const target of await this.scanTargets()) {
      let cursor = '0';
      do {
        const [next, keys] = await target.scan(cursor, pattern, SCAN_COUNT);
        for (const key of keys) if (found.size < limit) found.add(key);
        cursor = next;
      } while (cursor !== '0' && found.size < limit);
      if (found.size >= limit) break;
    }
    return [...found];
  }

  subscribeToChannel(channel: string, onMessage: (message: string) => void): Promise<() => void> {
    if (this.closed) return Promise.reject(closedError(this.name));
    return this.channels().subscribe(channel, onMessage);
  }

  watch(keys: readonly string[], listener: ReleaseListener): Promise<() => void> {
    if (this.closed) return Promise.reject(closedError(this.name));
    return this.channels().watch(keys, listener);
  }

  /** Marks the node closed and closes its subscriber, if one was opened; resolves once it ended. */
  protected closeChannels(): Promise<void> {
    this.closed = true;
    const closing = this.channelsOpened?.close() ?? Promise.resolve();
    this.channelsOpened = undefined;
    return closing;
  }

  private channels(): NodeChannels {
    return (this.channelsOpened ??= this.openChannels());
  }
}

function closedError(name: string): Error {
  return new Error(`${name}: closed by quit(), no more subscriptions`);
}

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

/** ACQUIRE's `{7}`: sent without the data-age marker's key, the call needs it. */
function needsSince(raw: unknown): boolean {
  return Array.isArray(raw) && raw.length === 1 && raw[0] === ACQUIRE_NEEDS_SINCE;
}
