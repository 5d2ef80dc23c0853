import { LockLostError, QuorumUnavailableError, type NodeVote } from '../errors';
import { NodeGroup, askNodes, votesOf, type LockNode, checkedFlag } from '../nodes';
import type { Lock } from '../lock';
import * as messages from '../messages';
import { EXTENDED, NOT_OWNER } from '../votes';
import { validateTtl } from '../options';
import { validUntil } from '../validity';

/**
 * `Redlock.extend()` once the lock is known to be the instance's own: validates `ttl` (default: the lock's
 * own), refuses a lock already released or expired, renews it on a quorum and announces `extended`.
 */
export async function extendLock(group: NodeGroup, lock: Lock, ttl: number = lock.ttl): Promise<Lock> {
  validateTtl(ttl, 'ttl');
  if (lock.isReleased) throw new LockLostError(lock.resources, messages.LOST_ALREADY_RELEASED);
  if (lock.remainingTime <= 0) {
    throw lock.lostError ?? new LockLostError(lock.resources, messages.LOST_BEFORE_EXTEND);
  }
  const { clock, events } = group;
  const started = clock.now();
  await extendOnQuorum(group, lock, ttl);
  if (events.has('extended')) {
    const elapsed = clock.now() - started;
    events.emit('extended', { resources: lock.resources, remainingTime: lock.remainingTime, elapsed });
  }
  return lock;
}

/**
 * Renews `lock` to `ttl` ms on a quorum (owner-checked on each node). The new validity is counted from
 * this call's own start. Throws {@link LockLostError} when too few nodes still hold the lock (or the renewal
 * itself outlasted the ttl), {@link QuorumUnavailableError} when too few nodes answered — the lock then
 * keeps its old deadline, or the new one when that is earlier (a shorter ttl may have been applied on some
 * nodes: docs/DESIGN.md §4).
 */
export async function extendOnQuorum(group: NodeGroup, lock: Lock, ttl: number): Promise<void> {
  const { nodes, clock, quorum } = group;
  const start = clock.now();
  const sequence = ++lock.extensionsSent;
  const result = await askNodes(
    group,
    'extend',
    (node) => node.extend(lock.keys, lock.value, ttl, lock.readerKeys),
    EXTEND_PLAN[quorum] ?? { needed: quorum, isYes: isTrue },
    checkedExtend,
  );
  const error = extensionOutcome(group, lock, ttl, start, sequence, result.success, result.yes, () =>
    votesOf(nodes, result.answers, (extended) => (extended ? EXTENDED : NOT_OWNER)),
  );
  if (error) throw error;
}

/**
 * What an extension of `lock` to `ttl` sent at `start` as the lock's `sequence`-th came to, once decided
 * (`success`: a quorum renewed it): undefined when the lock got its new deadline, else the error to report.
 * Shared by one lock's extend and the batched renewal (extend-batch.ts), so both decide alike.
 */
export function extensionOutcome(
  group: NodeGroup,
  lock: Lock,
  ttl: number,
  start: number,
  sequence: number,
  success: boolean,
  yes: number,
  votesNow: () => NodeVote[],
): Error | undefined {
  const { nodes, clock, quorum } = group;
  const deadline = validUntil(start, ttl, group.driftFactor);
  if (lock.isReleased) return new LockLostError(lock.resources, messages.LOST_ALREADY_RELEASED);
  // Never lengthen a lock that was declared lost meanwhile, nor hand back one already expired.
  if (success && deadline > clock.now() && !lock.lostError) {
    // An extension sent later decided first: its ttl ran last on the nodes, so this one may only shorten.
    if (sequence > lock.extensionApplied) {
      lock.extensionApplied = sequence;
      lock.setDeadline(deadline);
    } else if (deadline < lock.validUntil) lock.setDeadline(deadline);
    return undefined;
  }
  // Whatever the outcome, nodes that applied the new ttl (their answers may come too late to count, or not
  // at all) expire the keys by then: a shorter ttl shortens the validity even when the call failed.
  if (deadline < lock.validUntil) lock.setDeadline(deadline);
  const votes = votesNow();
  if (success) {
    return lock.lostError ?? new LockLostError(lock.resources, messages.LOST_EXTEND_TOO_SLOW, votes);
  }
  let notOwner = 0;
  for (const vote of votes) if (vote.outcome === 'not-owner') notOwner++;
  if (nodes.length - notOwner < quorum) {
    return new LockLostError(lock.resources, messages.lostQuorum(votes), votes);
  }
  return new QuorumUnavailableError(
    lock.resources,
    votes,
    1,
    quorum,
    messages.extendUnavailable(quorum, nodes.length, yes),
  );
}

function isTrue(extended: boolean): boolean {
  return extended;
}

function checkedExtend(node: LockNode, extended: unknown): boolean {
  return checkedFlag(node, 'extend', extended);
}

/** The (stateless) decision of an extend for each quorum size, built once. */
const EXTEND_PLAN = Array.from({ length: 64 }, (_, quorum) =>
  Object.freeze({ needed: quorum, isYes: isTrue }),
);
