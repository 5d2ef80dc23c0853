import type {
  AcquireReply,
  AcquireRequest,
  ExtendItem,
  KeyReading,
  NodeReading,
  PermitsReading,
  RevokeRequest,
} from '../core';
import { globToRegExp } from './glob';
import type { SortedSetEntry } from './keyspace';
import { formatInteger, luaNumber } from './lua-values';
import { ModelServer } from './model-server';
import type { Subscription } from './pub-sub';
import { type GuardArgs, guardReply } from './restart-guard';
import { FairQueueModel } from './fair-queue';

/** The ttl of a fence counter (ms), as the scripts write it. */
const FENCE_TTL = 3_600_000;
/** The most members of a readers set one inspection reads (the inspect script's `INSPECT_MEMBERS`). */
const INSPECT_MEMBERS = 100;

/**
 * One Redis node as the scripts in `lib/redis/scripts/` see it: a model of those scripts, checked against them
 * on a real redis-server by the differential test (`test/safety/sim/model-vs-redis.spec.ts`). Each script method
 * runs atomically (it is synchronous), with key expiry on the model clock, the restart guard in either mode and
 * a wall clock for `TIME`. The protected `how` methods are the shipped behaviour; a negative control overrides
 * one to plant a deviation the differential must catch.
 */
export class ScriptModel extends ModelServer {
  /** Fair waiting's queues (docs/DESIGN.md §18), on this node's keys and clock. */
  private readonly queue = new FairQueueModel(this.keyspace, () => this.clock.now());

  /** What a client that learnt this server's guard mode (and run_id, on its connection) sends with an acquire. */
  get guardArgs(): GuardArgs {
    return this.spec.infoReadable ? { runId: this.runId, noInfo: false } : { runId: '', noInfo: true };
  }

  /**
   * ACQUIRE: restart guard (precise or portable mode), all-or-nothing, own keys count as free, fence counters
   * raised. `guard` defaults to what a client that learnt this server sends.
   */
  acquire(request: AcquireRequest, guard: GuardArgs = this.guardArgs): AcquireReply {
    if (request.guardWindow > 0) {
      const refusal = guardReply(this.guardHost(), request, guard);
      if (refusal) return refusal;
    }
    const busy = this.readWrite(request);
    // Grants and busy answers carry the server's TIME in ms, as the script's do (the clock-step check).
    if (busy) return busy.outcome === 'busy' ? { ...busy, time: this.wallMs() } : busy;
    let token = 0;
    if (request.fenceKeys.length > 0) {
      const micros = this.clock.wallMicros();
      for (const key of request.fenceKeys) {
        const counter = Math.max((luaNumber(this.keyspace.get(key)?.value) ?? 0) + 1, micros);
        this.keyspace.set(key, formatInteger(counter), FENCE_TTL);
        token = Math.max(token, counter);
      }
    }
    return { outcome: 'acquired', token, time: this.wallMs() };
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
    for (const key of fenceKeys) {
      if ((luaNumber(this.keyspace.get(key)?.value) ?? 0) < token)
        this.keyspace.set(key, String(token), FENCE_TTL);
    }
    return true;
  }

  /** EXTEND (READ_EXTEND with `readers`): all-or-nothing, owner-checked, new ttl from now. */
  extend(keys: readonly string[], owner: string, ttl: number, readers?: readonly string[]): boolean {
    const now = this.clock.now();
    if (readers) {
      if (!this.readsAll(readers, owner)) return false;
      const nowMs = this.wallMs();
      for (const key of readers) {
        const set = this.keyspace.getSet(key) as SortedSetEntry;
        set.members.set(owner, nowMs + ttl);
        set.writtenAt = now;
        if (this.keyspace.pttl(set) < ttl) set.expireAt = now + ttl;
      }
      return true;
    }
    if (!this.holdsAll(keys, owner)) return false;
    for (const key of keys) {
      const entry = this.keyspace.get(key)!;
      entry.expireAt = now + ttl;
      entry.writtenAt = now;
    }
    return true;
  }

  /** EXTEND_MANY: each item as EXTEND (or READ_EXTEND) would answer it, in order. */
  extendMany(items: readonly ExtendItem[]): boolean[] {
    return items.map((item) => this.extend(item.keys, item.owner, item.ttl, item.readers));
  }

  /** RELEASE (READ_RELEASE with `readers`): compare-and-delete per key, announcing each deletion. */
  release(keys: readonly string[], owner: string, readers?: readonly string[]): number {
    let deleted = 0;
    if (readers) {
      readers.forEach((key, i) => {
        if (!this.keyspace.removeMember(key, owner)) return;
        deleted++;
        this.pubSub.announceRelease(keys[i]);
      });
      return deleted;
    }
    for (const key of keys) {
      if (this.keyspace.get(key)?.value !== owner) continue;
      this.keyspace.delete(key);
      deleted++;
      this.pubSub.announceRelease(key);
    }
    return deleted;
  }

  /** CLEAR_INTENT: deletes each intent key still holding `intent`, announcing it on its lock key's channel. */
  clearIntent(intentKeys: readonly string[], intent: string, queueKeys?: readonly string[]): number {
    let cleared = 0;
    for (const key of intentKeys) {
      if (this.keyspace.get(key)?.value !== intent) continue;
      this.keyspace.delete(key);
      cleared++;
      // The script's `string.sub(KEYS[i], 1, -8)`: the intent key less its `:intent`.
      this.pubSub.announceRelease(key.slice(0, -7));
    }
    if (queueKeys && queueKeys.length > 0) cleared += this.queue.clear(queueKeys, intent, this.pubSub);
    return cleared;
  }

  /**
   * LIMIT (a semaphore's recorded number of permits, docs/DESIGN.md §14): records `permits` when nothing is
   * recorded (PX `ttl`), else refreshes the record's ttl to at least `ttl`; returns the recorded number, or −1
   * when the key holds something that is not a number.
   */
  limit(key: string, permits: number, ttl: number): number {
    const now = this.clock.now();
    const recorded = this.keyspace.get(key);
    if (recorded === undefined) {
      this.keyspace.set(key, String(permits), ttl);
      return permits;
    }
    if (this.keyspace.pttl(recorded) < ttl) {
      recorded.expireAt = now + ttl;
      recorded.writtenAt = now;
    }
    return luaNumber(recorded.value) ?? -1;
  }

  /**
   * READ_PERMITS: LIMIT, and per permit key whether it holds nothing (absent or expired) — or LIMIT alone when
   * the permit tried `next` holds nothing.
   */
  readPermits(
    key: string,
    permitKeys: readonly string[],
    permits: number,
    ttl: number,
    next?: number,
  ): PermitsReading {
    const limit = this.limit(key, permits, ttl);
    const empty = (k: string) => this.keyspace.get(k) === undefined && this.keyspace.getSet(k) === undefined;
    if (next !== undefined && permitKeys[next] !== undefined && empty(permitKeys[next])) return { limit };
    return { limit, free: permitKeys.map(empty) };
  }

  /** INSPECT (read-only): the node's `TIME` in ms and each key's type, value or members, and PTTL. */
  inspect(keys: readonly string[]): NodeReading {
    return { time: this.wallMs(), keys: keys.map((key) => this.reading(key)) };
  }

  /** SCAN with MATCH `pattern` until `limit` keys (or the keyspace) are found. */
  scan(pattern: string, limit: number): string[] {
    const match = globToRegExp(pattern);
    return this.keyspace
      .keys()
      .filter((key) => match.test(key))
      .slice(0, Math.max(0, limit));
  }

  /**
   * REVOKE: deletes the keys whoever holds them; each deleted one of the first `lockKeys` is announced as
   * released, and when anything was deleted, `message` is published on `channel`. Returns how many were deleted.
   */
  revoke({ keys, lockKeys, channel, message }: RevokeRequest): number {
    let deleted = 0;
    keys.forEach((key, i) => {
      if (!this.keyspace.delete(key)) return;
      deleted++;
      if (i < lockKeys) this.pubSub.announceRelease(key);
    });
    if (deleted > 0) this.pubSub.publish(channel, message);
    return deleted;
  }

  /** SUBSCRIBE to the release announcements of `keys`; returns the unsubscribe function. */
  subscribe(keys: readonly string[], subscription: Subscription): () => void {
    return this.pubSub.watch(keys, subscription);
  }

  /** SUBSCRIBE `channel` (the revocation channel); returns the unsubscribe function. */
  subscribeChannel(channel: string, onMessage: (message: string) => void): () => void {
    return this.pubSub.subscribe(channel, onMessage);
  }

  /** Whether a writer keeps a new reader out (shipped: always). */
  protected writerKeepsReadersOut(): boolean {
    return true;
  }

  /** The expiry a reader gets in its readers set, on the node's clock (shipped: `TIME` + ttl). */
  protected readerExpiry(nowMs: number, ttl: number): number {
    return nowMs + ttl;
  }

  /** The uptime the acquire script takes from INFO's whole seconds (shipped: a second taken off, in ms). */
  protected uptimeOf(reportedSeconds: number): number {
    return Math.max(0, reportedSeconds - 1) * 1000;
  }

  /** When a data-age marker found missing counts from (shipped: now). */
  protected firstSeenAt(now: number, _window: number): number {
    return now;
  }

  /** Whether markers holding another application's data are taken as no marker (shipped: never). */
  protected get overwritesForeign(): boolean {
    return false;
  }

  /**
   * The lock part of ACQUIRE (after the guard, before fencing): a plain exclusive lock, or — with readers
   * keys — a writer (no other owner, no live reader; refused: sets the intent) or a reader (no writer, no
   * other acquisition's intent; added to the readers sets with its own expiry on this server's clock).
   * Returns the busy reply, or undefined once the keys are written.
   */
  private readWrite(request: AcquireRequest): AcquireReply | undefined {
    const rw = (request.readerKeys ?? []).length > 0 && (request.intentKeys ?? []).length > 0;
    if (rw && request.mode === 'read') return this.readLock(request);
    const intents = request.intentKeys ?? [];
    const intentTtl = request.intentTtl ?? 0;
    const setIntents = () => {
      if (intentTtl > 0)
        for (const key of intents) this.keyspace.set(key, request.intent ?? request.owner, intentTtl);
    };
    const ticket = request.intent ?? request.owner;
    const fair = rw && FairQueueModel.isFair(request);
    for (let i = 0; i < request.keys.length; i++) {
      const holder = this.keyspace.get(request.keys[i]);
      if (holder !== undefined && holder.value !== request.owner) {
        if (rw && intentTtl > 0) this.keyspace.set(intents[i], ticket, intentTtl);
        const position = fair ? this.queue.joinedPlace(request, ticket, this.wallMs()) : undefined;
        return { outcome: 'busy', holderTtl: this.keyspace.pttl(holder), ...placeOf(position) };
      }
    }
    if (rw) {
      const nowMs = this.wallMs();
      for (const key of request.readerKeys ?? []) {
        const set = this.keyspace.pruned(key, nowMs);
        if (set === undefined) continue;
        const last = Math.max(...set.members.values());
        setIntents();
        const position = fair ? this.queue.joinedPlace(request, ticket, nowMs) : undefined;
        return { outcome: 'busy', holderTtl: Math.max(0, last - nowMs), readers: true, ...placeOf(position) };
      }
      if (fair) {
        // join_queue before earlier_turn, as the script: a ticket a partial grant took out is back in front.
        this.queue.join(request, ticket, nowMs);
        const turn = this.queue.earlierTurn(request, ticket, nowMs);
        if (turn !== undefined) {
          const position = this.queue.place(request, ticket);
          return { outcome: 'busy', holderTtl: turn, queued: true, ...placeOf(position) };
        }
        this.queue.leave(request, ticket, nowMs);
      }
      for (const key of intents) {
        if (this.keyspace.get(key)?.value === (request.intent ?? request.owner)) this.keyspace.delete(key);
      }
    }
    for (const key of request.keys) this.keyspace.set(key, request.owner, request.ttl);
    return undefined;
  }

  /** A reader: refused by a writer or another acquisition's intent, else added to every readers set. */
  private readLock(request: AcquireRequest): AcquireReply | undefined {
    const intents = request.intentKeys ?? [];
    for (let i = 0; i < request.keys.length; i++) {
      const writer = this.keyspace.get(request.keys[i]);
      if (writer !== undefined && this.writerKeepsReadersOut()) {
        return { outcome: 'busy', holderTtl: this.keyspace.pttl(writer) };
      }
      const intent = this.keyspace.get(intents[i]);
      if (intent !== undefined && intent.value !== (request.intent ?? request.owner)) {
        return { outcome: 'busy', holderTtl: this.keyspace.pttl(intent) };
      }
    }
    const now = this.clock.now();
    const nowMs = this.wallMs();
    for (const key of request.readerKeys ?? []) {
      const set = this.keyspace.pruned(key, nowMs) ?? {
        members: new Map(),
        expireAt: Infinity,
        writtenAt: now,
      };
      set.members.set(request.owner, this.readerExpiry(nowMs, request.ttl));
      set.writtenAt = now;
      if (this.keyspace.pttl(set) < request.ttl) set.expireAt = now + request.ttl;
      this.keyspace.putSet(key, set);
    }
    return undefined;
  }

  /** One key as INSPECT reads it. */
  private reading(key: string): KeyReading {
    const entry = this.keyspace.get(key);
    if (entry) return { type: 'string', value: entry.value, pttl: this.keyspace.pttl(entry) };
    const set = this.keyspace.getSet(key);
    if (!set) return { type: 'none' };
    const members = [...set.members]
      .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, INSPECT_MEMBERS);
    return { type: 'zset', pttl: this.keyspace.pttl(set), count: set.members.size, members };
  }

  /** READ_FENCE's "held": a live entry of `owner` in every readers set. */
  private readsAll(readers: readonly string[], owner: string): boolean {
    const nowMs = this.wallMs();
    for (const key of readers) {
      const expiry = this.keyspace.getSet(key)?.members.get(owner);
      if (expiry === undefined || expiry <= nowMs) return false;
    }
    return true;
  }

  private holdsAll(keys: readonly string[], owner: string): boolean {
    for (const key of keys) if (this.keyspace.get(key)?.value !== owner) return false;
    return true;
  }

  /** The guard's view of this node, with its `how`s. */
  private guardHost() {
    return {
      name: this.name,
      keyspace: this.keyspace,
      runId: this.runId,
      infoReadable: this.spec.infoReadable,
      wallMs: () => this.wallMs(),
      reportedUptimeSeconds: () => this.reportedUptimeSeconds(),
      uptimeOf: (seconds: number) => this.uptimeOf(seconds),
      firstSeenAt: (now: number, window: number) => this.firstSeenAt(now, window),
      overwritesForeign: this.overwritesForeign,
    };
  }
}

/** A fair waiter's place in a busy answer, when it took a ticket. */
function placeOf(position: number | undefined): { position?: number } {
  return position === undefined ? {} : { position };
}
