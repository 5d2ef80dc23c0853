import type { AttemptContext } from './attempt';
import { LockLostError, QuorumUnavailableError, formatVotes } from './errors';
import type { Lock } from './lock';
import { fanOut } from './quorum';
import { votesOf } from './votes';

const EXTENDED = Object.freeze({ outcome: 'extended' as const });
const NOT_OWNER = Object.freeze({ outcome: 'not-owner' as const });

/**
 * Renews `lock` to `ttl` ms on a quorum (owner-checked on each node). The new validity is counted from
 * this call's own start. Throws {@link LockLostError} when too few nodes still hold the lock (or the renewal
 * itself outlasted the ttl), {@link QuorumUnavailableError} when too few nodes answered — the lock then
 * keeps its old deadline, or the new one when that is earlier (a shorter ttl may have been applied on some
 * nodes).
 */
export async function extendOnQuorum(context: AttemptContext, lock: Lock, ttl: number): Promise<void> {
  const { nodes, clock, quorum } = context;
  const start = clock.now();
  const result = await fanOut(nodes, (node) => node.extend(lock.keys, lock.value, ttl), {
    clock,
    timeout: context.nodeTimeout,
    needed: quorum,
    isYes: (extended) => extended,
    onError: (index, error) => context.nodeError(index, 'extend', error),
  });
  const deadline = start + ttl - context.drift(ttl);
  if (result.success) {
    // Never lengthen a lock that was declared lost meanwhile, nor hand back one already expired.
    if (deadline > clock.now() && !lock.lostError) {
      lock.setDeadline(deadline);
      return;
    }
  }
  // Whatever the outcome, nodes that did apply the new ttl (answers may come too late to count, or not at
  // all) now expire the keys by then: a shorter ttl shortens the guaranteed validity even when the call
  // failed. Found by the simulation (test/sim, seed 1639, profile short-extend).
  if (deadline < lock.validUntil) lock.setDeadline(deadline);
  const votes = votesOf(nodes, result.answers, (extended) => (extended ? EXTENDED : NOT_OWNER));
  if (result.success) {
    throw (
      lock.lostError ?? new LockLostError(lock.resources, 'the extension took longer than its ttl.', votes)
    );
  }
  const notOwner = votes.filter((vote) => vote.outcome === 'not-owner').length;
  if (nodes.length - notOwner < quorum) {
    throw new LockLostError(
      lock.resources,
      `too few nodes still hold it (${formatVotes(votes)}). Another owner may hold it now.`,
      votes,
    );
  }
  throw new QuorumUnavailableError(
    lock.resources,
    votes,
    1,
    quorum,
    `could not extend: a quorum of ${quorum} of ${nodes.length} nodes is needed, ${result.yes} agreed; ` +
      'the lock keeps its validity (shortened if the new ttl was shorter)',
  );
}
