import type { Clock, Timer } from './clock';
import { LockLostError } from './errors';
import type { Lock } from './lock';
import { LOST_BEFORE_RENEWAL } from './messages';

/** Renew once the remaining validity falls to this fraction of the ttl. */
const RENEW_AT = 2 / 3;

/** The shortest time between two extensions, in ms: short ttls must never make the extender spin. */
export const MIN_EXTEND_INTERVAL = 10;

/**
 * Keeps `lock` alive while work runs: renews it when two thirds of its ttl are left (leaving a third of
 * the ttl for the renewal to get through a slow node or a busy event loop), and declares it lost the
 * moment its validity runs out without a successful renewal — or as soon as a renewal shows that a quorum
 * no longer holds it. Returns the function that stops it (call it before releasing).
 *
 * Two timers per lock: the renewal, and a deadline that fires even while a renewal is still in flight, so
 * a slow node can never stretch the time during which work runs unprotected.
 */
export function keepAlive(
  lock: Lock,
  clock: Clock,
  extend: (lock: Lock) => Promise<unknown>,
  onLost: (lock: Lock, error: LockLostError) => void,
): () => void {
  const minInterval = Math.max(MIN_EXTEND_INTERVAL, Math.floor(lock.ttl / 10));
  let stopped = false;
  let renewal: Timer | undefined;
  let deadline: Timer | undefined;

  const lose = (error: LockLostError) => {
    if (stopped) return;
    stop();
    if (lock.markLost(error)) onLost(lock, error);
  };
  const armDeadline = () => {
    deadline?.cancel();
    deadline = clock.setTimeout(
      () => lose(new LockLostError(lock.resources, LOST_BEFORE_RENEWAL)),
      Math.max(0, lock.remainingTime),
    );
  };
  const scheduleRenewal = (delay: number) => {
    // The floor keeps short ttls from spinning, but never past half the validity left: a lock with a ttl
    // near the 10 ms minimum would otherwise always be lost before its first renewal.
    const due = Math.min(Math.max(minInterval, delay), Math.max(1, lock.remainingTime / 2));
    renewal = clock.setTimeout(renew, due);
  };
  const renew = () => {
    if (stopped) return;
    extend(lock).then(
      () => {
        if (stopped) return;
        armDeadline();
        scheduleRenewal(lock.remainingTime - RENEW_AT * lock.ttl);
      },
      (error: unknown) => {
        if (stopped) return;
        if (error instanceof LockLostError) lose(error);
        // Too few nodes answered: the lock is unchanged; try again while validity lasts (the deadline decides).
        else scheduleRenewal(minInterval);
      },
    );
  };
  const stop = () => {
    stopped = true;
    renewal?.cancel();
    deadline?.cancel();
  };

  armDeadline();
  scheduleRenewal(lock.remainingTime - RENEW_AT * lock.ttl);
  return stop;
}
