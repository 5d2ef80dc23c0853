import type { Lock } from '../core';

/** Below this many tracked locks, finished ones are not swept (they leave when released). */
const SWEEP_THRESHOLD = 1_024;

/**
 * The locks an application holds through its locked sections and `acquire()`, and has not released yet,
 * so shutdown can signal them and wait for them. Locks whose validity ran out are swept once the set grows
 * (callers that let locks expire instead of releasing them must not make it grow forever); the sweep
 * threshold doubles with the live size, so the cost stays constant per lock.
 */
export class HeldLocks {
  private readonly locks = new Set<Lock>();
  private sweepAt = SWEEP_THRESHOLD;
  private emptied: (() => void) | undefined;

  add(lock: Lock): void {
    this.locks.add(lock);
    if (this.locks.size < this.sweepAt) return;
    this.sweep();
    this.sweepAt = Math.max(SWEEP_THRESHOLD, this.locks.size * 2);
  }

  delete(lock: Lock): void {
    this.locks.delete(lock);
    if (this.emptied && this.live().length === 0) this.emptied();
  }

  /**
   * The tracked locks shutdown waits for: those still valid, and those being released (a lock leaves the set
   * only once its release answered). Unreleased locks whose validity ran out guard nothing any more.
   */
  live(): Lock[] {
    return [...this.locks].filter(isLive);
  }

  /** Resolves once no valid, unreleased lock is tracked (at once when there is none). */
  whenEmpty(): Promise<void> {
    this.sweep();
    if (this.locks.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.emptied = resolve));
  }

  private sweep(): void {
    for (const held of this.locks) if (!isLive(held)) this.locks.delete(held);
  }
}

function isLive(lock: Lock): boolean {
  return lock.isReleased || lock.remainingTime > 0;
}
