import { randomBytes } from 'node:crypto';
import type { Clock } from './clock';
import type { NodeVote } from './errors';

// `await using` (TypeScript 5.2+) calls `[Symbol.asyncDispose]()`. Node has that symbol since 20.4 (and
// 18.18); on an older 20.x, define it once, as a registry symbol so that every copy of this library (and code
// that checks `Symbol.for('Symbol.asyncDispose')`) agrees on it. TypeScript's helpers for `await using` read
// `Symbol.asyncDispose` when the declaration runs, so they find this one. Defined before the class below,
// whose method name is computed from it.
if (typeof (Symbol as { asyncDispose?: symbol }).asyncDispose !== 'symbol') {
  Object.defineProperty(Symbol, 'asyncDispose', { value: Symbol.for('Symbol.asyncDispose') });
}

/**
 * Whether keys written under one owner value are still wanted: set by the acquisition when it gives up and
 * by the lock when it is released; read when a straggling "acquired" answer arrives, which is then undone on
 * its node (docs/DESIGN.md §3).
 */
export interface OwnerClaim {
  abandoned: boolean;
}

/** What a release did on each node. */
export interface ReleaseOutcome {
  /** How many nodes deleted this lock's keys (0 when it had already expired everywhere). */
  readonly releasedOn: number;
  /**
   * Per-node answers: `released`, `not-owner` (nothing of ours was there), `error`, `timeout`, and `pending`
   * for a node that had not answered yet when `release()` resolved at quorum.
   */
  readonly votes: readonly NodeVote[];
}

/**
 * What `release()` did. It resolves as soon as a quorum of nodes has deleted the lock's keys (nobody else can
 * be kept from the lock by them then); without such a quorum, once every node answered or timed out.
 * Releasing never throws for Redis-side reasons.
 */
export interface ReleaseResult extends ReleaseOutcome {
  /**
   * Every node's answer: resolves once the last node answered or the node timeout passed (never rejects).
   * The same figures as the result itself when `release()` had to wait for every node anyway.
   */
  readonly settled: Promise<ReleaseOutcome>;
}

/** Operations a {@link Lock} delegates to the instance that created it. */
export interface LockOwner {
  extend(lock: Lock, ttl?: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
}

/** @internal What a lock was acquired with, as the {@link Lock} constructor takes it. */
export interface LockGrant {
  readonly resources: readonly string[];
  readonly keys: readonly string[];
  readonly fenceKeys: readonly string[];
  readonly value: string;
  readonly ttl: number;
  readonly deadline: number;
  readonly attempts: number;
  readonly fencingToken: number | undefined;
  /** With `permits`: which permit slot (0 to permits − 1) the lock holds. */
  readonly permit?: number;
  readonly mode?: 'read' | 'write';
  /** A read lock's readers sets, aligned with `keys`. */
  readonly readerKeys?: readonly string[];
}

/**
 * A lock held on a quorum of nodes. Valid until {@link Lock.remainingTime} reaches 0 unless extended; after
 * that it guarantees nothing, and {@link Lock.signal} aborts.
 */
export class Lock {
  /** The resources this lock holds, in the order they were given. */
  readonly resources: readonly string[];
  /** The owner value written to every key: 16 random bytes, unique to this acquisition. */
  readonly value: string;
  /** The requested time to live, in ms (also the default for {@link Lock.extend}). */
  readonly ttl: number;
  /** How many attempts the acquisition took. */
  readonly attempts: number;
  /**
   * With fencing: a number that strictly increases across successive holders of each resource. Pass it
   * to the resource you protect and have it reject writes carrying a smaller token than one already seen.
   * Undefined without fencing.
   */
  readonly fencingToken: number | undefined;
  /**
   * With `permits` (a counting semaphore): which permit this lock holds, from 0 to `permits − 1`. Undefined
   * for an exclusive lock.
   */
  readonly permit: number | undefined;
  /** `'write'` (held alone: the default) or `'read'` (shared with other readers). */
  readonly mode: 'read' | 'write';
  /** @internal A read lock's readers sets (aligned with `keys`); undefined for a writer. */
  readonly readerKeys: readonly string[] | undefined;
  /** @internal The Redis keys, aligned with `resources`. */
  readonly keys: readonly string[];
  /** @internal The fence counter keys (empty without fencing). */
  readonly fenceKeys: readonly string[];
  private deadline: number;
  /** @internal What the gauges count this lock under: its `@Locked` key template, '' for a direct call. */
  template = '';
  /** @internal Extensions sent so far: each takes the next number when it is sent (docs/DESIGN.md §4). */
  extensionsSent = 0;
  /** @internal The number of the latest-sent extension whose success set the deadline. */
  extensionApplied = 0;
  /** @internal Told when the deadline moves earlier (the renewal watchdog re-arms its deadline timer). */
  deadlineWatch: { deadlineEarlier(): void } | undefined = undefined;
  /** @internal When it was granted, on the instance's monotonic clock. */
  readonly grantedAt: number;
  private released = false;
  private lostReason: Error | undefined;
  /** Why the signal aborted while the lock was still held (the application is shutting down). */
  private abortReason: Error | undefined;
  private controller: AbortController | undefined;

  /** @internal Whether keys under this owner value are still wanted. */
  readonly claim: OwnerClaim;
  /** @internal The instance that acquired it. */
  readonly issuer: LockOwner;
  private readonly clock: Clock;

  /** @internal Locks are created by `Redlock`, never by users. */
  constructor(grant: LockGrant, claim: OwnerClaim, issuer: LockOwner, clock: Clock) {
    this.claim = claim;
    this.issuer = issuer;
    this.clock = clock;
    this.resources = grant.resources;
    this.keys = grant.keys;
    this.fenceKeys = grant.fenceKeys;
    this.value = grant.value;
    this.ttl = grant.ttl;
    this.deadline = grant.deadline;
    this.grantedAt = clock.now();
    this.attempts = grant.attempts;
    this.fencingToken = grant.fencingToken;
    this.permit = grant.permit;
    this.mode = grant.mode ?? 'write';
    this.readerKeys = this.mode === 'read' ? grant.readerKeys : undefined;
  }

  /** Milliseconds of guaranteed validity left (≤ 0 once expired or lost). */
  get remainingTime(): number {
    return this.lostReason ? 0 : this.deadline - this.clock.now();
  }

  /** Estimated wall-clock time (epoch ms) at which the validity ends. Informational; use `remainingTime`. */
  get expiresAt(): number {
    return Date.now() + this.remainingTime;
  }

  /** True once the validity ran out, the lock was lost, or it was released. */
  get isExpired(): boolean {
    return this.released || this.remainingTime <= 0;
  }

  /** True once `release()` was called. */
  get isReleased(): boolean {
    return this.released;
  }

  /** Why the lock was lost (a {@link LockLostError}), or undefined while it is not known to be lost. */
  get lostError(): Error | undefined {
    return this.lostReason;
  }

  /**
   * Aborts, with a `LockLostError` as its reason, the moment the lock can no longer be guaranteed — when
   * auto-extension (inside `using()` / `@Locked`) failed or the validity ran out — and, with a
   * `ShutdownError`, when the application starts shutting down while the lock is held (the lock is still
   * held then; finish or stop the work soon). Pass it to cancellable work (fetch, database drivers).
   */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      const reason = this.lostReason ?? this.abortReason;
      if (reason) this.controller.abort(reason);
    }
    return this.controller.signal;
  }

  /** @internal Aborts the signal without declaring the lock lost (shutdown); the first reason wins. */
  abortSignal(reason: Error): void {
    if (this.lostReason || this.abortReason || this.released) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /** Extends the lock to `ttl` ms (default: its original ttl) from now. See `Redlock.extend`. */
  extend(ttl?: number): Promise<Lock> {
    return this.issuer.extend(this, ttl);
  }

  /** Releases the lock on every node. See `Redlock.release`. */
  release(): Promise<ReleaseResult> {
    return this.issuer.release(this);
  }

  /**
   * Releases the lock (as {@link Lock.release}) when the `await using` declaration holding it goes out of
   * scope — also when the block throws. Releasing a lock that was already released is harmless.
   *
   * ```ts
   * async function pay(redlock: Redlock) {
   *   await using lock = await redlock.acquire('order:42');
   *   // ... the lock is released here, however the function ends
   * }
   * ```
   *
   * Needs TypeScript 5.2 or later and the `AsyncDisposable` type: `@types/node` declares it (20.19 does),
   * as does `"lib": [..., "esnext.disposable"]`. Unlike `using()`, the lock is not renewed while the block
   * runs.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.issuer.release(this);
  }

  /** @internal */
  setDeadline(deadline: number): void {
    const earlier = deadline < this.deadline;
    this.deadline = deadline;
    if (earlier) this.deadlineWatch?.deadlineEarlier();
  }

  /** @internal The deadline on the instance's monotonic clock. */
  get validUntil(): number {
    return this.deadline;
  }

  /** @internal Records the loss once and aborts the signal; returns false when it was already lost. */
  markLost(reason: Error): boolean {
    if (this.lostReason || this.released) return false;
    this.lostReason = reason;
    this.controller?.abort(reason);
    return true;
  }

  /** @internal Marks the lock released; returns false when it already was. */
  markReleased(): boolean {
    if (this.released) return false;
    this.released = true;
    this.claim.abandoned = true;
    return true;
  }
}

/** Random bytes drawn 4 KiB at a time: one `randomBytes` call per ~200 acquisitions instead of one each. */
let pool = Buffer.alloc(0);
let poolOffset = 0;
const OWNER_BYTES = 16;
/** The length of an owner value's random part: 16 bytes in base64url. */
const RANDOM_CHARS = 22;

/**
 * The owner value of one attempt: 16 random bytes (128 bits, never reused, base64url), then
 * `:<epoch ms, base 36>:<label>` — when the attempt was sent, by this process's clock, and the instance's owner
 * label, for inspection (docs/DESIGN.md §16). The random part is what makes the value this attempt's alone.
 */
export function newOwnerValue(label: string): string {
  if (poolOffset + OWNER_BYTES > pool.length) {
    pool = randomBytes(4096);
    poolOffset = 0;
  }
  const random = pool.toString('base64url', poolOffset, poolOffset + OWNER_BYTES);
  poolOffset += OWNER_BYTES;
  return `${random}:${Date.now().toString(36)}:${label}`;
}

/** A later attempt's owner value: new random bytes and time, the label of `previous` (no parsing of its time). */
export function nextOwnerValue(previous: string): string {
  const labelAt = previous.indexOf(':', RANDOM_CHARS + 1) + 1;
  return newOwnerValue(labelAt > 0 ? previous.slice(labelAt) : '');
}

/** What an owner value says of its holder: its label and since when (epoch ms, the holder's clock). */
export interface OwnerOfValue {
  readonly label: string;
  readonly since: number;
}

/** The label and time of an owner value this library wrote, or undefined for any other value. */
export function ownerOf(value: string): OwnerOfValue | undefined {
  if (value.length < RANDOM_CHARS + 3 || value[RANDOM_CHARS] !== ':') return undefined;
  const end = value.indexOf(':', RANDOM_CHARS + 1);
  if (end === -1) return undefined;
  const since = parseInt(value.slice(RANDOM_CHARS + 1, end), 36);
  if (!Number.isSafeInteger(since)) return undefined;
  return { label: value.slice(end + 1), since };
}
