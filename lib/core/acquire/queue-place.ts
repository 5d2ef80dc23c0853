import type { NodeVote } from '../errors';
import type { AcquireReply } from '../nodes';
import type { VoteOutcome } from '../votes';
import type { AcquirePlan } from './plan';

/** Fair waiting (docs/DESIGN.md §18): a waiter's place in the queues, from its busy answers. */

/** A fair waiter's busy vote with its place in that node's queue. */
export function positionedVote(reply: Extract<AcquireReply, { outcome: 'busy' }>): VoteOutcome {
  return {
    outcome: 'busy',
    holderTtl: reply.holderTtl,
    ...(reply.readers ? { readers: true } : {}),
    ...(reply.queued ? { queued: true } : {}),
    position: reply.position,
  };
}

/**
 * A fair waiter's place (docs/DESIGN.md §18) after a refused attempt: the place at which a quorum of the nodes
 * that answered with one has it (the largest known when fewer did); undefined when none did.
 */
export function placeInQueue(votes: readonly NodeVote[], quorum: number): number | undefined {
  const places = votes
    .map((vote) => vote.position)
    .filter((place): place is number => place !== undefined)
    .sort((a, b) => a - b);
  if (places.length === 0) return undefined;
  return places[Math.min(quorum, places.length) - 1];
}

/** A `waiting` event when a fair waiter's place changed; returns the place now known. */
export function announcePlace(
  plan: AcquirePlan,
  resources: readonly string[],
  now: number | undefined,
  before: number | undefined,
  arrivedAt: number,
): number | undefined {
  if (now === undefined || now === before) return before;
  if (plan.events.has('waiting'))
    plan.events.emit('waiting', {
      resources,
      position: now,
      waited: Math.round(plan.clock.now() - arrivedAt),
    });
  return now;
}

/**
 * A fair waiter's split vote where every node that refused it still had a holder and has it first in line
 * (place 1, no other waiter's turn): the holder's release is on its way to those nodes, and nobody else may take
 * the lock meanwhile. Its split backoff would leave the lock idle: it retries soon instead (retry.ts).
 */
export function nextInLine(votes: readonly NodeVote[]): boolean {
  let refused = false;
  for (const vote of votes) {
    if (vote.outcome !== 'busy') continue;
    if (vote.queued || vote.position !== 1) return false;
    refused = true;
  }
  return refused;
}
