import type { Lock } from '../core';

/** Below this many tracked locks, finished ones are not swept (they leave when released). */
const SWEEP_THRESHOLD = 1_024;

/**
 * The locks an application handed out and that were not released through it yet, so shutdown can
 * release them. Locks whose validity ran out are swept once the set grows (callers that let locks expire
 * instead of releasing them must not make it grow forever); the sweep threshold doubles with the live size,
 * so the cost stays constant per lock.
 */
export class HeldLocks {
  private readonly locks = new Set<Lock>();
  private sweepAt = SWEEP_THRESHOLD;

  add(lock: Lock): void {
    this.locks.add(lock);
    if (this.locks.size < this.sweepAt) return;
    for (const held of this.locks) if (held.isExpired) this.locks.delete(held);
    this.sweepAt = Math.max(SWEEP_THRESHOLD, this.locks.size * 2);
  }

  delete(lock: Lock): void {
    this.locks.delete(lock);
  }

  /** Removes and returns every tracked lock not released yet. */
  drain(): Lock[] {
    const locks = [...this.locks].filter((lock) => !lock.isReleased);
    this.locks.clear();
    return locks;
  }
}
