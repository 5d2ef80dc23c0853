import type { Clock } from './clock';
import type { LockLostError } from './errors';
import { toError } from './fan-out';
import type { Lock } from './lock';
import { Renewals } from './renewals';

export { MIN_EXTEND_INTERVAL } from './renewals';

/**
 * Keeps one `lock` alive while work runs, with the policy of {@link Renewals} (renewed when two thirds of its
 * ttl are left; declared lost the moment its validity runs out without a successful renewal, or as soon as
 * a renewal shows that a quorum no longer holds it). Returns the function that stops it. A `Redlock`
 * instance keeps all its locks in one `Renewals`; this is the same policy for a single lock.
 */
export function keepAlive(
  lock: Lock,
  clock: Clock,
  extend: (lock: Lock) => Promise<unknown>,
  onLost: (lock: Lock, error: LockLostError) => void,
): () => void {
  const renewEach = (locks: readonly Lock[], settle: (index: number, outcome: Error | undefined) => void) =>
    locks.forEach((held, i) =>
      extend(held).then(
        () => settle(i, undefined),
        (error: unknown) => settle(i, toError(error)),
      ),
    );
  return new Renewals(clock, renewEach, onLost).add(lock);
}
