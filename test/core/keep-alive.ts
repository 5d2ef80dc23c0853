import type { Clock } from '../../lib/core/clock';
import type { LockLostError } from '../../lib/core/errors';
import { toError } from '../../lib/core/nodes/fan-out';
import type { Lock } from '../../lib/core/lock';
import { Renewals } from '../../lib/core/hold/renewals';

export { MIN_EXTEND_INTERVAL } from '../../lib/core/hold/renewals';

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
