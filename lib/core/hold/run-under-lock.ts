import { MAX_DURATION } from '../durations';
import { LockLostError, RedlockError } from '../errors';
import type { Lock, ReleaseResult } from '../lock';
import * as messages from '../messages';
import type { CallSettings, RedlockLogger } from '../options';

/** @internal What running work under a lock needs of its instance. */
export interface LockHost {
  keepAlive(lock: Lock): () => void;
  extend(lock: Lock, ttl?: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
  /** Declares a lock lost whose validity ran out during the work (counted and announced once). */
  lostDuringWork(lock: Lock, error: LockLostError): void;
  readonly logger: RedlockLogger | undefined;
}

/**
 * @internal Runs `work` while `lock` is held: renews it (per `settings.autoExtend`), then releases it — or, with
 * `keepFor`, keeps it that many more ms (a scheduled tick, docs/DESIGN.md §10). `work`'s error passes through
 * unchanged; a lock lost meanwhile rejects with {@link LockLostError} once `work` settled (or only warns, with
 * `onLockLost: 'warn'`). What `using()` and the Nest layer run.
 */
export async function runUnderLock<T>(
  host: LockHost,
  lock: Lock,
  settings: Pick<CallSettings, 'autoExtend' | 'onLockLost'>,
  work: () => Promise<T>,
  keepFor?: () => number,
): Promise<T> {
  const stop = settings.autoExtend ? host.keepAlive(lock) : undefined;
  let result: T;
  try {
    result = await work();
  } catch (error) {
    stop?.();
    // A scheduled tick that failed was still run: keep its lock too, so no other instance runs it again.
    if (!(await keptAfterWork(host, lock, keepFor))) await host.release(lock);
    throw abortedBy(lock, error, settings.onLockLost) ?? error;
  }
  stop?.();
  const lost = lock.lostError ?? (lock.remainingTime <= 0 ? expiredDuringWork(host, lock) : undefined);
  if (lost || !(await keptAfterWork(host, lock, keepFor))) await host.release(lock);
  if (lost) {
    if (settings.onLockLost === 'throw') throw lost;
    host.logger?.warn(messages.finishedAfterLoss(lost.message));
  }
  return result;
}

/**
 * After the work, with `keepFor`: sets the lock to expire in `keepFor()` ms instead of releasing it. False
 * when it should be released (nothing or too little to keep, no longer valid, or the nodes did not take it).
 */
async function keptAfterWork(
  host: LockHost,
  lock: Lock,
  keepFor: (() => number) | undefined,
): Promise<boolean> {
  try {
    // A monthly cron's next tick is past the longest ttl: kept for that long (~24.8 days) instead.
    const ms = keepFor ? Math.min(Math.floor(keepFor()), MAX_DURATION) : 0;
    if (!(ms >= MIN_KEEP) || lock.isExpired) return false;
    await host.extend(lock, ms);
    return true;
  } catch {
    return false;
  }
}

/**
 * The library's own error when `error` is the work giving up on `lock.signal` — the signal's reason itself
 * (`signal.throwIfAborted()`) or an AbortError caused by it (timers, fetch, streams): the loss, revocation or
 * shutdown that aborted it, as when the work returns after a loss (docs/DESIGN.md §9: an HTTP route then
 * answers 503, not 500). Any other error of the work passes through unchanged, and so does this one with
 * `onLockLost: 'warn'` after a loss.
 */
function abortedBy(lock: Lock, error: unknown, onLockLost: 'throw' | 'warn'): RedlockError | undefined {
  if (!lock.signal.aborted) return undefined;
  const reason: unknown = lock.signal.reason;
  if (!(reason instanceof RedlockError)) return undefined;
  if (reason instanceof LockLostError && onLockLost === 'warn') return undefined;
  // Not `instanceof Error`: an AbortError of Node's own timers or streams may come from another realm.
  let cause: unknown = error;
  for (let depth = 0; depth < 3 && typeof cause === 'object' && cause !== null; depth++) {
    if (cause === reason) return reason;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
}

function expiredDuringWork(host: LockHost, lock: Lock): LockLostError {
  const error = new LockLostError(lock.resources, messages.LOST_DURING_WORK);
  host.lostDuringWork(lock, error);
  return error;
}

/** Keeping a lock for less than this after its work is not worth a round trip: it is released instead. */
const MIN_KEEP = 20;
