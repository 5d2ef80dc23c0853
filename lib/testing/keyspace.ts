/** A Redis string as the model holds it. */
export interface StringEntry {
  /** Redis stores strings; numbers are written as the scripts format them (`%.0f`). */
  value: string;
  /** Time (ms, the model's `now()`) after which the key no longer exists (Infinity: no ttl). */
  expireAt: number;
  /** Time of the last write (for a restart that loses the most recent writes). */
  writtenAt: number;
}

/** A sorted set (the readers set of a read-write lock): member → score (an expiry on the node's wall clock, ms). */
export interface SortedSetEntry {
  readonly members: Map<string, number>;
  /** Time after which the whole set no longer exists (Infinity: no ttl). */
  expireAt: number;
  writtenAt: number;
}

/**
 * The keys of one model node: strings and sorted sets (the only types the scripts write), with Redis' lazy
 * expiry — a key lives until `now()` passes its expiry (at its expiry it still exists, PTTL 0).
 */
export class Keyspace {
  private readonly strings = new Map<string, StringEntry>();
  private readonly sets = new Map<string, SortedSetEntry>();

  constructor(private readonly now: () => number) {}

  /** The live string at `key`. */
  get(key: string): StringEntry | undefined {
    return this.live(this.strings, key);
  }

  /** The live sorted set at `key`. */
  getSet(key: string): SortedSetEntry | undefined {
    return this.live(this.sets, key);
  }

  /** SET key value [PX ttl] (a sorted set there is replaced, as SET does). */
  set(key: string, value: string, ttl?: number): void {
    const now = this.now();
    this.sets.delete(key);
    this.strings.set(key, { value, expireAt: ttl === undefined ? Infinity : now + ttl, writtenAt: now });
  }

  /** Stores a sorted set (replacing whatever `key` held). */
  putSet(key: string, set: SortedSetEntry): void {
    this.strings.delete(key);
    this.sets.set(key, set);
  }

  /** DEL: whether a live key was deleted. */
  delete(key: string): boolean {
    const existed = this.get(key) !== undefined || this.getSet(key) !== undefined;
    this.strings.delete(key);
    this.sets.delete(key);
    return existed;
  }

  /** ZREMRANGEBYSCORE key -inf `nowMs`: entries whose expiry is not after `nowMs` go; an empty set goes too. */
  pruned(key: string, nowMs: number): SortedSetEntry | undefined {
    const set = this.getSet(key);
    if (set === undefined) return undefined;
    for (const [owner, expiry] of set.members) if (expiry <= nowMs) set.members.delete(owner);
    if (set.members.size === 0) {
      this.sets.delete(key);
      return undefined;
    }
    return set;
  }

  /** ZREM: whether `member` was in the set (an emptied set is deleted). */
  removeMember(key: string, member: string): boolean {
    const set = this.getSet(key);
    if (!set || !set.members.delete(member)) return false;
    if (set.members.size === 0) this.sets.delete(key);
    return true;
  }

  /** PTTL of an entry: −1 without a ttl, else the ms left (0 in its last instant). */
  pttl(entry: { readonly expireAt: number }): number {
    if (entry.expireAt === Infinity) return -1;
    return Math.max(0, Math.round(entry.expireAt - this.now()));
  }

  /** Every live key, strings first, in insertion order. */
  keys(): string[] {
    const out: string[] = [];
    for (const key of [...this.strings.keys()]) if (this.get(key)) out.push(key);
    for (const key of [...this.sets.keys()]) if (this.getSet(key)) out.push(key);
    return out;
  }

  /** FLUSHALL, or with `since`: only the entries written after it go (a restart that lost its last writes). */
  clear(since = -Infinity): void {
    for (const keyspace of [this.strings, this.sets] as Map<string, { writtenAt: number }>[]) {
      for (const [key, entry] of keyspace) if (entry.writtenAt > since) keyspace.delete(key);
    }
  }

  /** A string's expiry even once past it (undefined: not written since deleted); reads without expiring. */
  rawExpireAt(key: string): number | undefined {
    return this.strings.get(key)?.expireAt;
  }

  /** A sorted set as stored, even once expired. */
  rawSet(key: string): SortedSetEntry | undefined {
    return this.sets.get(key);
  }

  /** The entry at `key` of a map, or undefined once `now()` passed its expiry (deleted then, lazily). */
  private live<T extends { expireAt: number }>(map: Map<string, T>, key: string): T | undefined {
    const entry = map.get(key);
    if (entry === undefined) return undefined;
    if (this.now() > entry.expireAt) {
      map.delete(key);
      return undefined;
    }
    return entry;
  }
}
