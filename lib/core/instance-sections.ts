import type { LeadOptions, TermRunner } from './primitives';
import type { Lock, ReleaseResult } from './lock';
import type { CallSettings, UsingOptions } from './options';

/**
 * @internal The one entry point of the Nest layer's locked sections into a core instance (`RedlockCore.sections`):
 * they validate a call's options once, lock resources they already normalised, run the work under the lock
 * with the core's renewal and loss policy, and learn of every release (shutdown bookkeeping).
 */
export interface SectionPort {
  /** The effective settings of one call: `using()`'s options validated and completed with the instance's. */
  settingsFor(options: UsingOptions | undefined): CallSettings;
  /**
   * Acquires normalised resources (throwing when busy); with `retrySplitsOnly`, a lock held by another owner
   * is not waited for (a scheduled tick being run elsewhere). The caller waits, and the lock is held, under
   * `template` in the gauges (`stats.waitingByTemplate`, `stats.heldByTemplate`): low cardinality.
   */
  lock(
    resources: string[],
    settings: CallSettings,
    retrySplitsOnly: boolean,
    template: string,
  ): Promise<Lock>;
  /** Runs `work` while `lock` is held, as `using()` does; with `keepFor`, keeps the lock that many ms after. */
  runUnderLock<T>(
    lock: Lock,
    settings: Pick<CallSettings, 'autoExtend' | 'onLockLost'>,
    work: () => Promise<T>,
    keepFor?: () => number,
  ): Promise<T>;
  /** Tells `listener` of each lock of the instance once its release resolved; returns the off switch. */
  onReleased(listener: (lock: Lock) => void): () => void;
  /** Releases a lock of the instance (`Redlock.release`). */
  release(lock: Lock): Promise<ReleaseResult>;
  /** `Redlock.lead()` with each term run by `runTerm` (a locked section: drained at shutdown). */
  lead<T>(
    name: string,
    work: (lease: Lock) => Promise<T>,
    options: LeadOptions | undefined,
    runTerm: TermRunner,
  ): Promise<T>;
}
