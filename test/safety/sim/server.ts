import { type AcquireReply, type AcquireRequest, ForeignDataError } from '../../../lib/core';
import type { SimContext } from './context';

/** What a server needs from its surroundings: the true time (ms) and, for shuffling a paused backlog, a PRNG. */
export interface ServerEnvironment {
  readonly scheduler: { readonly now: number };
  readonly rng: Pick<SimContext['rng'], 'next'>;
}

/** How one simulated Redis server behaves beyond the scripts. */
export interface ServerSpec {
  readonly name: string;
  /** Its wall clock (the `TIME` command) in µs at true time 0. */
  readonly clockOffsetUs: number;
  /** How fast its wall clock runs relative to true time. */
  readonly clockRate: number;
  /** True time at which it last started (negative: long before the schedule). */
  readonly bootTime: number;
  /**
   * How `INFO server` counts `uptime_in_seconds`: 1000 as Redis does (whole wall-clock seconds now minus whole
   * seconds at start, up to a second more than the real uptime), 1 as an honest floor of the exact uptime.
   */
  readonly uptimeGranularity: number;
  /**
   * Whether the acquire script can read `INFO` here (precise guard mode). False: denied (ACL, managed service),
   * so the client sends "INFO not readable" and the script runs the portable mode (the data-age marker).
   */
  readonly infoReadable: boolean;
  /**
   * Negative controls only — the guard clears early: `'uptime-over-reported'` takes INFO's whole-second uptime
   * as is (no second taken off: the bug the chaos suite found); `'data-age-head-start'` counts a lost marker's
   * age from 90 % of a window before the acquire that found it missing (counting from the server's start
   * instead is still safe: the window covers every lock written before the crash);
   * `'foreign-markers-overwritten'` treats a marker holding another application's data as no marker (what
   * the scripts did before they named it). Undefined: the scripts as shipped.
   */
  readonly guardMutation?: 'uptime-over-reported' | 'data-age-head-start' | 'foreign-markers-overwritten';
  /** Insane clocks (negative control): each restart sets its wall clock back by this many µs. */
  readonly clockStepBackUs: number;
  /**
   * Negative controls only — read-write locks broken on this node: `'ignore-writer'` grants a reader while a
   * writer holds the lock; `'client-clock'` stores a reader's expiry as a client whose clock runs a ttl ahead
   * would compute it (the entry lapses at once on the node's clock). Undefined: the scripts as shipped.
   */
  readonly readMutation?: 'ignore-writer' | 'client-clock';
  /**
   * With persistence (an fsync-every-second AOF): a restart reloads the data, minus whatever was written in the
   * last `persistenceLag` ms before the crash. Undefined: restarts come back empty.
   */
  readonly persistenceLag: number | undefined;
}

/** Somebody subscribed to release announcements of some keys, through one connection. */
export interface Subscription {
  active: boolean;
  /** Delivers a pushed message to the subscriber (through the network: it may be late or lost). */
  push(event: 'released' | 'lost'): void;
}

interface Value {
  /** Redis stores strings; numbers are written as the scripts format them (`%.0f`). */
  value: string;
  /** True time after which the key no longer exists (Infinity: no ttl). */
  expireAt: number;
  /** True time of the last write (for persistence that loses the most recent writes). */
  writtenAt: number;
}

/** A readers set (read-write locks): owner → expiry on this server's wall clock (ms), as the sorted set. */
interface Readers {
  readonly members: Map<string, number>;
  /** True time after which the whole set no longer exists (Infinity: no ttl). */
  expireAt: number;
  writtenAt: number;
}

interface Queued {
  readonly connection: number;
  readonly run: () => void;
}

const FENCE_TTL = 3_600_000;

/** What the client sends with an acquire beside the request (ARGV[6] and ARGV[7] of the script). */
export interface GuardArgs {
  /** The server's run_id as the client learnt it ('' if unknown). */
  readonly runId: string;
  /** The client knows INFO is not readable here (portable mode). */
  readonly noInfo: boolean;
}

/** Redis' `tonumber` on a stored string, as the scripts use it (undefined: missing or not a number). */
function luaNumber(value: string | undefined): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const number = Number(value);
  return Number.isFinite(number) ? number : undefined;
}

/** `string.format('%.0f', x)`. */
function formatInteger(value: number): string {
  return Math.round(value).toFixed(0);
}

/**
 * One Redis node as the scripts in `lib/redis/scripts/` see it: a model of those scripts, checked against
 * them on a real redis-server by `model-vs-redis.spec.ts`. Each script method runs atomically (it is
 * synchronous), with key expiry in true time, the restart guard in either mode (precise: the uptime `INFO`
 * reports, a second taken off, and the boot marker; portable: the data-age marker; markers holding another
 * application's data are left alone and named, as `ForeignDataError`) and a wall clock for
 * `TIME`. Faults: crash (data — or with persistence its last writes — and subscriptions lost; commands
 * arriving meanwhile fail), restart (uptime from zero, a new run_id), pause (commands wait; on resume they run
 * with the order across connections shuffled, each connection's own order kept, as SIGCONT'd Redis does).
 */
export class VirtualServer {
  up = true;
  paused = false;
  /** INFO's run_id: new on every start. */
  runId: string;
  private boots = 0;
  /** The server's wall clock (µs) when it last started. */
  private bootWallUs: number;
  private clockOffsetUs: number;
  private readonly data = new Map<string, Value>();
  /** Sorted sets (the readers sets of read-write locks), apart from the strings in `data`. */
  private readonly sets = new Map<string, Readers>();
  /** The per-node count of the semaphore control (`countAcquire`). */
  private readonly counted = new Map<string, Map<string, number>>();
  private backlog: Queued[] = [];
  private readonly subscriptions = new Map<string, Set<Subscription>>();

  constructor(
    private readonly context: ServerEnvironment,
    readonly spec: ServerSpec,
  ) {
    this.clockOffsetUs = spec.clockOffsetUs;
    this.bootWallUs = this.wallUsAt(spec.bootTime);
    this.runId = this.nextRunId();
  }

  get name(): string {
    return this.spec.name;
  }

  /** What a client that learnt this server's guard mode (and run_id, on its connection) sends with an acquire. */
  get guardArgs(): GuardArgs {
    return this.spec.infoReadable ? { runId: this.runId, noInfo: false } : { runId: '', noInfo: true };
  }

  /** A command arrived from `connection`: run it now, queue it (paused), or report the node down. */
  deliver(connection: number, run: () => void): 'ran' | 'queued' | 'down' {
    if (!this.up) return 'down';
    if (this.paused) {
      this.backlog.push({ connection, run });
      return 'queued';
    }
    run();
    return 'ran';
  }

  crash(): void {
    this.up = false;
    this.paused = false;
    const lag = this.spec.persistenceLag;
    if (lag === undefined) {
      this.data.clear();
      this.sets.clear();
    } else {
      // The lost writes are dropped (rather than reverted to older values): a lock key of the current holder
      // vanishes, a fence counter falls back to nothing — what the restart guard and server time must cover.
      const horizon = this.context.scheduler.now - lag;
      for (const [key, entry] of this.data) if (entry.writtenAt > horizon) this.data.delete(key);
      for (const [key, set] of this.sets) if (set.writtenAt > horizon) this.sets.delete(key);
    }
    this.backlog = [];
    for (const set of this.subscriptions.values()) {
      for (const subscription of set) {
        if (subscription.active) subscription.push('lost');
        subscription.active = false;
      }
    }
    this.subscriptions.clear();
  }

  /** Starts again (after crash()): uptime from now, a new run_id; `bootWallUs` overrides the start time. */
  restart(bootWallUs?: number): void {
    this.up = true;
    this.clockOffsetUs -= this.spec.clockStepBackUs;
    this.bootWallUs = bootWallUs ?? this.wallUsAt(this.context.scheduler.now);
    this.runId = this.nextRunId();
  }

  /** FLUSHALL: every key gone, the server stays up (uptime and run_id unchanged). */
  flushAll(): void {
    this.data.clear();
    this.sets.clear();
  }

  /** SET key value [PX ttl]: data written by something else than the scripts (a restored marker, other data). */
  write(key: string, value: string, ttl?: number): void {
    const now = this.context.scheduler.now;
    this.data.set(key, { value, expireAt: ttl === undefined ? Infinity : now + ttl, writtenAt: now });
  }

  pause(): void {
    if (this.up) this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    const queues = new Map<number, Queued[]>();
    for (const item of this.backlog) {
      const queue = queues.get(item.connection);
      if (queue) queue.push(item);
      else queues.set(item.connection, [item]);
    }
    this.backlog = [];
    const lists = [...queues.values()];
    while (lists.length > 0) {
      const index = Math.floor(this.context.rng.next() * lists.length);
      const item = lists[index].shift() as Queued;
      if (lists[index].length === 0) lists.splice(index, 1);
      item.run();
    }
  }

  /**
   * ACQUIRE: restart guard (precise or portable mode), all-or-nothing, own keys count as free, fence counters
   * raised. `guard` defaults to what a client that learnt this server sends.
   */
  acquire(request: AcquireRequest, guard: GuardArgs = this.guardArgs): AcquireReply {
    if (request.guardWindow > 0) {
      const refusal = this.guard(request, guard);
      if (refusal) return refusal;
    }
    const busy = this.readWrite(request);
    if (busy) return busy;
    let token = 0;
    if (request.fenceKeys.length > 0) {
      const now = this.context.scheduler.now;
      const micros = this.micros();
      for (const key of request.fenceKeys) {
        const counter = Math.max((luaNumber(this.get(key)?.value) ?? 0) + 1, micros);
        this.data.set(key, { value: formatInteger(counter), expireAt: now + FENCE_TTL, writtenAt: now });
        token = Math.max(token, counter);
      }
    }
    return { outcome: 'acquired', token };
  }

  /**
   * The lock part of ACQUIRE (after the guard, before fencing): a plain exclusive lock, or — with readers
   * keys — a writer (no other owner, no live reader; refused: sets the intent) or a reader (no writer, no
   * other acquisition's intent; added to the readers sets with its own expiry on this server's clock).
   * Returns the busy reply, or undefined once the keys are written.
   */
  private readWrite(request: AcquireRequest): AcquireReply | undefined {
    const now = this.context.scheduler.now;
    const n = request.keys.length;
    const readers = request.readerKeys ?? [];
    const intents = request.intentKeys ?? [];
    const rw = readers.length > 0 && intents.length > 0;
    const intentTtl = request.intentTtl ?? 0;
    const setIntent = (i: number) => {
      if (intentTtl > 0) this.write(intents[i], request.intent ?? request.owner, intentTtl);
    };
    if (rw && request.mode === 'read') {
      for (let i = 0; i < n; i++) {
        const writer = this.get(request.keys[i]);
        if (writer !== undefined && this.spec.readMutation !== 'ignore-writer') {
          return { outcome: 'busy', holderTtl: this.pttl(writer) };
        }
        const intent = this.get(intents[i]);
        if (intent !== undefined && intent.value !== (request.intent ?? request.owner)) {
          return { outcome: 'busy', holderTtl: this.pttl(intent) };
        }
      }
      const nowMs = this.wallMs();
      for (const key of readers) {
        const set = this.pruned(key, nowMs) ?? { members: new Map(), expireAt: Infinity, writtenAt: now };
        // The control's client-side expiry: "now + ttl" on a clock a ttl behind the node's.
        const skew = this.spec.readMutation === 'client-clock' ? request.ttl : 0;
        set.members.set(request.owner, nowMs + request.ttl - skew);
        set.writtenAt = now;
        if (this.pttl(set) < request.ttl) set.expireAt = now + request.ttl;
        this.sets.set(key, set);
      }
      return undefined;
    }
    for (let i = 0; i < n; i++) {
      const holder = this.get(request.keys[i]);
      if (holder !== undefined && holder.value !== request.owner) {
        if (rw && request.mode !== 'read') setIntent(i);
        return { outcome: 'busy', holderTtl: this.pttl(holder) };
      }
    }
    if (rw) {
      const nowMs = this.wallMs();
      for (const key of readers) {
        const set = this.pruned(key, nowMs);
        if (set === undefined) continue;
        const last = Math.max(...set.members.values());
        for (let j = 0; j < n; j++) setIntent(j);
        return { outcome: 'busy', holderTtl: Math.max(0, last - nowMs), readers: true };
      }
      for (const key of intents) {
        if (this.get(key)?.value === (request.intent ?? request.owner)) this.data.delete(key);
      }
    }
    for (const key of request.keys) {
      this.data.set(key, { value: request.owner, expireAt: now + request.ttl, writtenAt: now });
    }
    return undefined;
  }

  /** READ_FENCE's "held": a live entry of `owner` in every readers set. */
  private readsAll(readers: readonly string[], owner: string): boolean {
    const nowMs = this.wallMs();
    for (const key of readers) {
      const expiry = this.getSet(key)?.members.get(owner);
      if (expiry === undefined || expiry <= nowMs) return false;
    }
    return true;
  }

  /** The restart guard of the acquire script: a refusal, or undefined to go on. */
  private guard(request: AcquireRequest, args: GuardArgs): AcquireReply | undefined {
    const boot = request.guardKey;
    const since = `${request.guardKey}:since`;
    const now = Math.floor(this.micros() / 1000);
    if (!args.noInfo) {
      // A boot marker of another type or form is another application's data: left alone, named (ForeignDataError).
      const value = this.markerValue(boot);
      const marker = /^(\w+):(\d+)$/.exec(value ?? '');
      if (value !== undefined && !marker && !/^\w+$/.test(value) && !this.overwritesForeign) {
        throw new ForeignDataError(this.name, boot, 'string');
      }
      if (marker && args.runId !== '' && marker[1] === args.runId) {
        const up = now - Number(marker[2]);
        if (up < request.guardWindow) return { outcome: 'refused', uptime: Math.max(0, up), basis: 'uptime' };
        return undefined;
      }
    }
    const recorded = this.markerValue(since);
    if (recorded !== undefined && !/^\d+$/.test(recorded) && !this.overwritesForeign) {
      throw new ForeignDataError(this.name, since, 'string');
    }
    // INFO from inside the script: readable only in precise mode, and only asked when the client did not say no.
    const info = !args.noInfo && this.spec.infoReadable;
    let first = luaNumber(recorded);
    if (info) {
      const reported = this.reportedUptimeSeconds();
      const uptime =
        this.spec.guardMutation === 'uptime-over-reported'
          ? reported * 1000
          : Math.max(0, reported - 1) * 1000;
      if (uptime < request.guardWindow) return { outcome: 'refused', uptime, basis: 'uptime' };
      this.write(boot, `${this.runId}:${formatInteger(now - uptime)}`);
      if (first === undefined) this.write(since, formatInteger(now - uptime));
      return undefined;
    }
    if (first === undefined) {
      first = now;
      if (this.spec.guardMutation === 'data-age-head-start') first -= Math.floor(request.guardWindow * 0.9);
      this.write(since, formatInteger(first));
    }
    if (now - first < request.guardWindow) {
      return { outcome: 'refused', uptime: Math.max(0, now - first), basis: 'data-age' };
    }
    return undefined;
  }

  private get overwritesForeign(): boolean {
    return this.spec.guardMutation === 'foreign-markers-overwritten';
  }

  /** A restart-guard marker's string, or undefined; a sorted set there is another application's data. */
  private markerValue(key: string): string | undefined {
    if (this.getSet(key) && !this.overwritesForeign) throw new ForeignDataError(this.name, key, 'zset');
    return this.get(key)?.value;
  }

  /** FENCE: only while the owner holds every key, raise each counter to at least the token. */
  fence(
    keys: readonly string[],
    fenceKeys: readonly string[],
    owner: string,
    token: number,
    readers?: readonly string[],
  ): boolean {
    if (readers ? !this.readsAll(readers, owner) : !this.holdsAll(keys, owner)) return false;
    const now = this.context.scheduler.now;
    for (const key of fenceKeys) {
      if ((luaNumber(this.get(key)?.value) ?? 0) < token)
        this.data.set(key, { value: String(token), expireAt: now + FENCE_TTL, writtenAt: now });
    }
    return true;
  }

  /** EXTEND: all-or-nothing, owner-checked, new ttl from now. */
  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): boolean {
    const now = this.context.scheduler.now;
    if (readers) {
      if (!this.readsAll(readers, owner)) return false;
      const nowMs = this.wallMs();
      for (const key of readers) {
        const set = this.getSet(key) as Readers;
        set.members.set(owner, nowMs + ttl);
        set.writtenAt = now;
        if (this.pttl(set) < ttl) set.expireAt = now + ttl;
      }
      return true;
    }
    if (!this.holdsAll(keys, owner)) return false;
    for (const key of keys) {
      const entry = this.data.get(key) as Value;
      entry.expireAt = now + ttl;
      entry.writtenAt = now;
    }
    return true;
  }

  /** RELEASE: compare-and-delete per key, announcing each deletion. */
  release(keys: readonly string[], owner: string, readers?: readonly string[]): number {
    let deleted = 0;
    if (readers) {
      readers.forEach((key, i) => {
        const set = this.getSet(key);
        if (!set || !set.members.delete(owner)) return;
        if (set.members.size === 0) this.sets.delete(key);
        deleted++;
        this.announce(keys[i]);
      });
      return deleted;
    }
    for (const key of keys) {
      if (this.get(key)?.value !== owner) continue;
      this.data.delete(key);
      deleted++;
      this.announce(key);
    }
    return deleted;
  }

  /** PUBLISH `<key>:released` to the subscribers of `key`. */
  private announce(key: string): void {
    const set = this.subscriptions.get(key);
    if (set) for (const subscription of set) if (subscription.active) subscription.push('released');
  }

  /**
   * LIMIT (a semaphore's recorded number of permits, docs/DESIGN.md §14): records `permits` when nothing is
   * recorded (PX `ttl`), else refreshes the record's ttl to at least `ttl`; returns the recorded number, or −1
   * when the key holds something that is not a number.
   */
  limit(key: string, permits: number, ttl: number): number {
    const now = this.context.scheduler.now;
    const recorded = this.get(key);
    if (recorded === undefined) {
      this.data.set(key, { value: String(permits), expireAt: now + ttl, writtenAt: now });
      return permits;
    }
    if (this.pttl(recorded) < ttl) {
      recorded.expireAt = now + ttl;
      recorded.writtenAt = now;
    }
    return luaNumber(recorded.value) ?? -1;
  }

  /**
   * NEGATIVE CONTROL ONLY — redis-semaphore's per-node count (its acquire script): drop holders whose time is
   * up, then admit `owner` when fewer than `limit` hold `key` here. Accepted on a majority, each node enforces
   * the limit alone. Expiry in true time (the script scores by the client's clock; the control needs no more).
   */
  countAcquire(key: string, limit: number, owner: string, ttl: number): boolean {
    const now = this.context.scheduler.now;
    const holders = this.counted.get(key) ?? new Map<string, number>();
    for (const [holder, until] of holders) if (until <= now) holders.delete(holder);
    this.counted.set(key, holders);
    if (holders.size >= limit && !holders.has(owner)) return false;
    holders.set(owner, now + ttl);
    return true;
  }

  /** NEGATIVE CONTROL ONLY: the per-node count's release (ZREM). */
  countRelease(key: string, owner: string): number {
    return this.counted.get(key)?.delete(owner) ? 1 : 0;
  }

  /** SUBSCRIBE to the release announcements of `keys`; returns the unsubscribe function. */
  subscribe(keys: readonly string[], subscription: Subscription): () => void {
    for (const key of keys) {
      let set = this.subscriptions.get(key);
      if (!set) this.subscriptions.set(key, (set = new Set()));
      set.add(subscription);
    }
    return () => {
      subscription.active = false;
      for (const key of keys) this.subscriptions.get(key)?.delete(subscription);
    };
  }

  /** The value of `key` (lazy expiry, as Redis: a key lives until true time passes its expiry). */
  peek(key: string): string | undefined {
    return this.get(key)?.value;
  }

  /** Every live key with its value and PTTL (−1: no ttl), for comparisons. */
  dump(): Map<string, { value: string; pttl: number }> {
    const out = new Map<string, { value: string; pttl: number }>();
    for (const key of [...this.data.keys()]) {
      const entry = this.get(key);
      if (entry) out.set(key, { value: entry.value, pttl: this.pttl(entry) });
    }
    return out;
  }

  /** For the differential test: the uptime the acquire script would compute now (ms, a second taken off). */
  uptimeForTest(): number {
    return Math.max(0, this.reportedUptimeSeconds() - 1) * 1000;
  }

  /**
   * For the differential test: when `key` expires or expired (true time; Infinity: no ttl; undefined: not
   * written since it was deleted). Reads without expiring, so a key just gone still tells when it went.
   */
  expireAtForTest(key: string): number | undefined {
    return this.data.get(key)?.expireAt;
  }

  /** For the differential test: each live readers set, member → expiry (server ms), with its PTTL. */
  dumpSets(): Map<string, { members: Map<string, number>; pttl: number }> {
    const out = new Map<string, { members: Map<string, number>; pttl: number }>();
    for (const key of [...this.sets.keys()]) {
      const set = this.getSet(key);
      if (set) out.set(key, { members: new Map(set.members), pttl: this.pttl(set) });
    }
    return out;
  }

  /** For the differential test: makes `key` a readers set with these members (server ms), as the real one. */
  writeSetForTest(key: string, members: ReadonlyMap<string, number>, ttl?: number): void {
    const now = this.context.scheduler.now;
    this.sets.set(key, {
      members: new Map(members),
      expireAt: ttl === undefined ? Infinity : now + ttl,
      writtenAt: now,
    });
  }

  /** For the differential test: a readers set's expiry (true time) and its members' (server ms). */
  setForTest(key: string): { expireAt: number; members: ReadonlyMap<string, number> } | undefined {
    return this.sets.get(key);
  }

  /** The readers set at `key`, or undefined (lazy expiry of the whole set, as for strings). */
  private getSet(key: string): Readers | undefined {
    return this.live(this.sets, key);
  }

  /** ZREMRANGEBYSCORE key -inf now: entries whose expiry is not after `nowMs` go; an empty set goes too. */
  private pruned(key: string, nowMs: number): Readers | undefined {
    const set = this.getSet(key);
    if (set === undefined) return undefined;
    for (const [owner, expiry] of set.members) if (expiry <= nowMs) set.members.delete(owner);
    if (set.members.size === 0) {
      this.sets.delete(key);
      return undefined;
    }
    return set;
  }

  /** The script's `TIME` in whole ms: seconds × 1000 + floor(µs / 1000). */
  private wallMs(): number {
    return Math.floor(this.micros() / 1000);
  }

  private get(key: string): Value | undefined {
    return this.live(this.data, key);
  }

  /** The entry at `key` of a keyspace, or undefined once true time passed its expiry (deleted then, lazily). */
  private live<T extends { expireAt: number }>(keyspace: Map<string, T>, key: string): T | undefined {
    const entry = keyspace.get(key);
    if (entry === undefined) return undefined;
    if (this.context.scheduler.now > entry.expireAt) {
      keyspace.delete(key);
      return undefined;
    }
    return entry;
  }

  private holdsAll(keys: readonly string[], owner: string): boolean {
    for (const key of keys) if (this.get(key)?.value !== owner) return false;
    return true;
  }

  private pttl(entry: { readonly expireAt: number }): number {
    if (entry.expireAt === Infinity) return -1;
    return Math.max(0, Math.round(entry.expireAt - this.context.scheduler.now));
  }

  /** `uptime_in_seconds` as INFO reports it (see `uptimeGranularity`). */
  private reportedUptimeSeconds(): number {
    const nowUs = this.micros();
    if (this.spec.uptimeGranularity >= 1000) {
      return Math.max(0, Math.floor(nowUs / 1e6) - Math.floor(this.bootWallUs / 1e6));
    }
    return Math.max(0, Math.floor((nowUs - this.bootWallUs) / 1e6));
  }

  private nextRunId(): string {
    this.boots++;
    return `${this.spec.name.replace(/\W/g, '')}boot${this.boots}`;
  }

  private wallUsAt(time: number): number {
    return Math.floor(this.clockOffsetUs + this.spec.clockRate * time * 1000);
  }

  private micros(): number {
    return this.wallUsAt(this.context.scheduler.now);
  }
}
