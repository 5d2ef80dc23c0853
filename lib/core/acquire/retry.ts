import type { NodeVote } from '../errors';
import type { AcquireRequest } from '../nodes';
import type { AcquirePlan, Attempt } from './plan';
import type { ReleaseWaiter } from './release-waiter';
import { nextInLine } from './queue-place';

/** The intent ttl of an acquisition's attempts after the first (a writer's first attempt may set none). */
export function intentTtlOf(request: AcquireRequest): number {
  return request.laterIntentTtl ?? request.intentTtl ?? 0;
}

/**
 * The delay before retry number `attempt` (1 = the first retry): `retryDelay × 5^(attempt−1)`, capped at
 * `maxRetryDelay`, then scaled by a random factor in [0.5, 1.5) so that competing waiters spread out
 * instead of retrying in lockstep. `random` returns a number in [0, 1).
 */
export function backoffDelay(
  attempt: number,
  retryDelay: number,
  maxRetryDelay: number,
  random: () => number,
): number {
  const base = Math.min(maxRetryDelay, retryDelay * 5 ** Math.min(attempt - 1, 20));
  return base * (0.5 + random());
}

/**
 * How long to sleep before the next attempt, given the time left in the wait budget: never past the
 * deadline, and when a busy holder's key will expire sooner than the backoff, wake up just after it does.
 * Returns undefined when the budget is used up.
 */
export function nextDelay(
  backoff: number,
  remainingBudget: number,
  holderTtl: number | undefined,
): number | undefined {
  if (remainingBudget <= 0) return undefined;
  let delay = backoff;
  if (holderTtl !== undefined && holderTtl >= 0 && holderTtl + 1 < delay) delay = holderTtl + 1;
  return Math.min(delay, remainingBudget);
}

/** Where an acquisition stands after a failed attempt. */
export interface RetryPoint {
  readonly attempt: Exclude<Attempt, { kind: 'acquired' }>;
  /** Attempts so far, and how many of them were split votes. */
  readonly attempts: number;
  readonly splits: number;
  /** This attempt was a split vote: we won some nodes, other contenders won others, nobody a quorum. */
  readonly split: boolean;
  /** Split votes in a row where this fair waiter was first in line wherever refused (queue-place.ts). */
  readonly nextInLine: number;
  /** What is left of the wait budget, in ms. */
  readonly budget: number;
}

/**
 * In how many ms a quorum's copies of the lock can have expired, by the busy nodes' ttls: the
 * (quorum − free)-th smallest holder ttl, where `free` nodes said yes to this attempt. The lock cannot be free
 * before that; the smallest ttl alone would hunt the one node whose copy expired early — after a forward step
 * of its clock, say — and win a quorum with its vote (issue "clock steps": 18–23 overlaps measured with the
 * smallest). Undefined when the busy nodes' ttls cannot make a quorum (unknown or no expiry).
 */
export function quorumFreeIn(votes: readonly NodeVote[], quorum: number): number | undefined {
  let free = 0;
  const ttls: number[] = [];
  for (const vote of votes) {
    if (vote.outcome === 'acquired') free++;
    else if (vote.outcome === 'busy' && vote.holderTtl !== undefined && vote.holderTtl >= 0) {
      ttls.push(vote.holderTtl);
    }
  }
  const needed = quorum - free;
  if (needed <= 0) return ttls.length > 0 ? Math.min(...ttls) : undefined;
  if (needed > ttls.length) return undefined;
  ttls.sort((a, b) => a - b);
  return ttls[needed - 1];
}

/** A split vote: some node said yes to this attempt, yet it is busy. */
export function isSplit(attempt: Exclude<Attempt, { kind: 'acquired' }>): boolean {
  return attempt.kind === 'busy' && attempt.votes.some((vote) => vote.outcome === 'acquired');
}

/** Split votes of one acquisition so far, and the current run of them first in line (fair waiting). */
export interface SplitTally {
  splits: number;
  nextInLine: number;
}

/** The retry point after refused attempt number `attempts`, counting its split vote in `tally`. */
export function retryPointOf(
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
  attempts: number,
  tally: SplitTally,
  fair: boolean,
  budget: number,
): RetryPoint {
  const split = isSplit(attempt);
  if (split) tally.splits++;
  tally.nextInLine = split && fair && nextInLine(attempt.votes) ? tally.nextInLine + 1 : 0;
  return { attempt, attempts, splits: tally.splits, split, nextInLine: tally.nextInLine, budget };
}

/** A fair waiter first in line after a split vote retries within this many ms (doubling while it repeats). */
const HEAD_RETRY = 5;

/**
 * How long to wait before the next attempt, or `undefined` to give up (docs/DESIGN.md §1). A split vote backs
 * off randomly, growing (deaf to the others' release announcements, except a fair waiter's), so the tie breaks —
 * a fair waiter first in line wherever refused retries within {@link HEAD_RETRY} ms (§18); a busy lock waits for
 * its release announcement or its holder's ttl; a quorum kept away by the restart guard only is waited out
 * when the budget allows; otherwise jittered exponential backoff.
 */
export async function retryDelay(
  plan: AcquirePlan,
  request: AcquireRequest,
  waiter: ReleaseWaiter,
  { attempt, attempts, splits, split, nextInLine, budget }: RetryPoint,
  retrySplitsOnly: boolean,
): Promise<number | undefined> {
  // A lock another owner holds on a quorum is final when only split votes are worth retrying.
  if (budget <= 0 || (retrySplitsOnly && attempt.kind === 'busy' && !split)) return undefined;
  if (split) {
    await waiter.subscribe();
    // First in line, the holder's release still on its way to some nodes: soon (woken by those nodes'
    // announcements), growing only while it repeats (a node that keeps the old holder's key until its ttl).
    const base =
      nextInLine > 0 ? Math.min(Math.max(1, plan.retryDelay), HEAD_RETRY) : Math.max(1, plan.retryDelay);
    return Math.min(
      budget,
      plan.random() * base * 2 ** Math.min(nextInLine > 0 ? nextInLine - 1 : splits, 5),
    );
  }
  if (attempt.kind === 'busy' && (await waiter.subscribe()) && !waiter.announced) {
    // Subscribed: sleep until the holder's key expires unless its release is announced first. Right after
    // subscribing, try once more at once: the holder may have released before the subscription was active.
    // Held by readers: come back before this writer's intent (renewed by each attempt) lapses (§15).
    const readers = attempt.votes.some((vote) => vote.outcome === 'busy' && vote.readers === true);
    const intentTtl = intentTtlOf(request);
    const cap = readers && intentTtl ? intentTtl / 2 : Infinity;
    return waiter.justSubscribed ? 0 : Math.min(budget, cap, holderDelay(attempt.holderTtl, plan));
  }
  const guardWait =
    attempt.kind === 'unavailable' && !attempt.votes.some(isFailure)
      ? guardWaitOf(attempt.votes, plan.quorum)
      : undefined;
  if (guardWait) {
    // Only the restart guard keeps the quorum away, for a known time: wait it out when the budget allows,
    // or give up at once (the error says when it ends). With failing nodes too, back off as usual: they
    // may come back sooner.
    // (Uptime is known in whole seconds: the refusal may end up to a second later than it says.)
    return guardWait <= budget + GUARD_GRANULARITY
      ? Math.min(budget, guardWait + 1 + plan.random() * Math.min(plan.retryDelay, 5))
      : undefined;
  }
  if (waiter.announced) {
    return Math.min(budget, Math.max(waiter.quietFor, plan.random() * Math.min(plan.retryDelay, 5)));
  }
  const backoff = backoffDelay(attempts, plan.retryDelay, plan.maxRetryDelay, plan.random);
  return nextDelay(backoff, budget, attempt.kind === 'expired' ? undefined : attempt.holderTtl);
}

/**
 * How long until a quorum is past the restart guard, when refusals are what kept it away: the quorum-th
 * shortest wait over the nodes (0 for nodes that answered, none for nodes that failed). Undefined otherwise.
 */
export function guardWaitOf(votes: readonly NodeVote[], quorum: number): number | undefined {
  if (!votes.some((vote) => vote.outcome === 'refused')) return undefined;
  const waits = votes
    .map((vote) =>
      vote.outcome === 'refused'
        ? (vote.guardRemaining ?? Infinity)
        : vote.outcome === 'error' || vote.outcome === 'timeout'
          ? Infinity
          : 0,
    )
    .sort((a, b) => a - b);
  const wait = waits[quorum - 1];
  return wait !== undefined && Number.isFinite(wait) && wait > 0 ? Math.ceil(wait) : undefined;
}

/** How long to wait for a holder whose keys expire in `holderTtl` ms; unknown ttl: the longest backoff. */
export function holderDelay(holderTtl: number | undefined, plan: AcquirePlan): number {
  const jitter = plan.random() * Math.min(plan.retryDelay, 5);
  return (holderTtl === undefined || holderTtl < 0 ? plan.maxRetryDelay : holderTtl + 1) + jitter;
}

/** Nodes report uptime in whole seconds. */
const GUARD_GRANULARITY = 1_000;

export function isFailure(vote: NodeVote): boolean {
  return vote.outcome === 'error' || vote.outcome === 'timeout';
}
