import { randomBytes } from 'node:crypto';
import type { Clock } from './clock';
import type { NodeVote } from './errors';

/**
 * Shared between an acquisition and the lock it produced: whether keys written under this owner value are
 * still wanted. Once `done`, any straggling "acquired" answer is undone on its node.
 */
export interface OwnerState {
  done: boolean;
}

/** What `release()` did on each node. Releasing never throws for Redis-side reasons. */
export interface ReleaseResult {
  /** How many nodes deleted this lock's keys (0 when it had already expired everywhere). */
  readonly releasedOn: number;
  /** Per-node answers: `released`, `not-owner` (nothing of ours was there), `error`, `timeout`. */
  readonly votes: readonly NodeVote[];
}

/** Operations a {@link Lock} delegates to the instance that created it. */
export interface LockOwner {
  extend(lock: Lock, ttl?: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
}

/**
 * A lock held on a quorum of nodes. Valid until {@link Lock.remainingTime} reaches 0 unless extended; after
 * that it guarantees nothing.
 */
export class Lock {
  /** The owner value written to every key: 20 random bytes, unique to this acquisition. */
  readonly value: string;
  /** The requested time to live, in ms (also the default for {@link Lock.extend}). */
  readonly ttl: number;
  /** How many attempts the acquisition took. */
  readonly attempts: number;
  private deadline: number;
  private released = false;

  /** @internal Locks are created by `Redlock`, never by users. */
  constructor(
    /** The resources this lock holds, in the order they were given. */
    readonly resources: readonly string[],
    /** @internal The Redis keys, aligned with `resources`. */
    readonly keys: readonly string[],
    value: string,
    ttl: number,
    deadline: number,
    attempts: number,
    /** @internal */ readonly state: OwnerState,
    /** @internal The instance that acquired it. */ readonly issuer: LockOwner,
    private readonly clock: Clock,
  ) {
    this.value = value;
    this.ttl = ttl;
    this.deadline = deadline;
    this.attempts = attempts;
  }

  /** Milliseconds of guaranteed validity left (≤ 0 once expired). */
  get remainingTime(): number {
    return this.deadline - this.clock.now();
  }

  /** Estimated wall-clock time (epoch ms) at which the validity ends. Informational; use `remainingTime`. */
  get expiresAt(): number {
    return Date.now() + this.remainingTime;
  }

  /** True once the validity ran out or the lock was released. */
  get isExpired(): boolean {
    return this.released || this.remainingTime <= 0;
  }

  /** True once `release()` was called. */
  get isReleased(): boolean {
    return this.released;
  }

  /** Extends the lock to `ttl` ms (default: its original ttl) from now. See `Redlock.extend`. */
  extend(ttl?: number): Promise<Lock> {
    return this.issuer.extend(this, ttl);
  }

  /** Releases the lock on every node. See `Redlock.release`. */
  release(): Promise<ReleaseResult> {
    return this.issuer.release(this);
  }

  /** @internal */
  setDeadline(deadline: number): void {
    this.deadline = deadline;
  }

  /** @internal Marks the lock released; returns false when it already was. */
  markReleased(): boolean {
    if (this.released) return false;
    this.released = true;
    this.state.done = true;
    return true;
  }
}

/** 20 random bytes, base64url: the owner value of one acquisition. */
export function newOwnerValue(): string {
  return randomBytes(20).toString('base64url');
}
