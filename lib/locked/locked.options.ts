import type { UsingOptions } from '../core';

/**
 * Options of `@Locked`: the core's per-call options of `using()` (`ttl`, `wait`, `fencing`, `autoExtend`,
 * `onLockLost`, ...; unset ones come from the module) and what to do when the lock is busy.
 */
export interface LockedOptions extends UsingOptions {
  /**
   * When the lock is held elsewhere and does not become free within `wait`:
   * - `'throw'` (default): the call rejects with `LockBusyError` (409 Conflict on an HTTP route);
   * - `'skip'`: the method is not run; the call resolves `undefined` (an Observable completes empty) and a
   *   debug line is logged. What a `@Cron` task running on several instances wants. With `'skip'` the
   *   default `wait` is 0 (one attempt) instead of the module's.
   *
   * Default: `'throw'`, except on methods scheduled with `@Cron`, `@Interval` or `@Timeout`, where it is
   * `'skip'` (the tick is being run by another instance).
   */
  onBusy?: 'throw' | 'skip';
  /**
   * On a method scheduled with `@Cron`, `@Interval` or `@Timeout` (from `@nestjs/schedule`, above or below
   * `@Locked`): keep the lock after the method returns, until shortly before the next tick, so the tick
   * runs once across all instances although their timers fire apart (see README, "Scheduled jobs").
   * `false` releases the lock when the method returns (the tick then runs again on every instance whose
   * timer fires after that). Ignored on methods that are not scheduled. Default true.
   */
  oncePerTick?: boolean;
}
