import {
  AcquireAbortedError,
  LockBusyError,
  NodeVote,
  QuorumUnavailableError,
  RedlockClosedError,
} from '../errors';
import {
  Answer,
  NodeGroup,
  askNodes,
  votesOf,
  type AcquireReply,
  type AcquireRequest,
  type CountedReply,
  type LockNode,
  type NodeClocks,
  callNode,
  checkedAcquireReply,
  checkedFlag,
} from '../nodes';
import { OwnerClaim, nextOwnerValue } from '../lock';
import * as messages from '../messages';
import { ACQUIRED, NOT_OWNER, VoteOutcome } from '../votes';
import { clearIntents, releaseOnAll } from '../release';
import { ReleaseWaiter } from './release-waiter';
import { announcePlace, placeInQueue, positionedVote } from './queue-place';
import type { AcquirePlan, AcquisitionResult, Attempt } from './plan';
import { type SplitTally, guardWaitOf, intentTtlOf, quorumFreeIn, retryDelay, retryPointOf } from './retry';
import { driftOf, validUntil } from '../validity';

/**
 * Attempts until one succeeds or the wait budget is spent (docs/DESIGN.md §1). Between attempts on a busy
 * lock it waits for the holder's release announcement (subscribed before the next attempt, so a release
 * cannot slip between the busy answer and the subscription) or for the holder's remaining ttl, whichever
 * comes first; without announcements it falls back to jittered exponential backoff. On failure or abort
 * every key this owner may have written is removed on every node, including nodes that timed out. Every
 * attempt writes an owner value of its own (the first one `request.owner`), so the release of a failed
 * attempt, whenever a node runs it, can never delete what a later attempt won (docs/DESIGN.md §7). With
 * `retrySplitsOnly`, a lock another owner holds ends the acquisition at once; only split votes and
 * unavailable nodes are retried (a scheduled tick: the holder is running this very tick).
 */
export async function acquireWithRetries(
  plan: AcquirePlan,
  resources: readonly string[],
  request: AcquireRequest,
  wait: number,
  signal: AbortSignal | undefined,
  retrySplitsOnly = false,
  arrivedAt = plan.clock.now(),
): Promise<AcquisitionResult> {
  const refusal = { refused: false };
  let result: AcquisitionResult;
  try {
    const policy = { wait, signal, retrySplitsOnly, arrivedAt };
    result = await attemptUntilDecided(plan, resources, request, policy, refusal);
  } catch (error) {
    // Aborted or closed: the intent is taken back before the call rejects, as when it gives up.
    if (refusal.refused) await takeIntentBack(plan, request);
    throw error;
  }
  // Without the lock, nothing of it stays once the call returns; with it, the grant waits for no round trip.
  if (refusal.refused && result.kind === 'failed') await takeIntentBack(plan, request);
  else if (refusal.refused) void takeIntentBack(plan, request);
  return result;
}

/**
 * How long an acquisition may wait, what may abort it, whether only split votes are retried, and when the call
 * came (fair waiting: its ticket's arrival, the time queued in this process included).
 */
interface WaitPolicy {
  readonly wait: number;
  readonly signal: AbortSignal | undefined;
  readonly retrySplitsOnly: boolean;
  readonly arrivedAt: number;
}

/** The attempts of {@link acquireWithRetries}; `refusal.refused` tells it an attempt was refused (an intent). */
async function attemptUntilDecided(
  plan: AcquirePlan,
  resources: readonly string[],
  request: AcquireRequest,
  { wait, signal, retrySplitsOnly, arrivedAt }: WaitPolicy,
  refusal: { refused: boolean },
): Promise<AcquisitionResult> {
  const began = plan.clock.now();
  // Created on the first failed attempt: an uncontended acquisition never needs one.
  let waiter: ReleaseWaiter | undefined;
  const splits: SplitTally = { splits: 0, nextInLine: 0 };
  // Fair waiting: the place last announced by a `waiting` event.
  let place: number | undefined;
  try {
    for (let attempts = 1; ; attempts++) {
      // The previous attempt's keys are already being released: nothing of this acquisition to undo yet.
      throwIfAborted(signal, resources);
      if (waiter) waiter.announced = false;
      const current = attemptRequest(plan, request, attempts, arrivedAt);
      const claim: OwnerClaim = { abandoned: false };
      const attempt = await attemptAcquire(plan, current, claim, retrySplitsOnly);
      if (attempt.kind === 'acquired') {
        return { kind: 'acquired', attempt, attempts, owner: current.owner, claim, ...wakesOf(waiter) };
      }
      // Set on any refusal, also one that set no intent (a first attempt): the next attempt sets one, and may
      // still be on its way when the call ends (aborted, closed), so the end takes it back.
      refusal.refused = true;
      // This owner value is never written again: a late "acquired" for it is undone (undoLate, §3).
      claim.abandoned = !plan.unsafeReuseOwner;
      if (signal?.aborted) {
        claim.abandoned = true;
        await releaseOnAll(plan, current.keys, current.owner, readersOf(current));
        throwIfAborted(signal, resources);
      }
      if (request.queueKeys !== undefined && attempt.kind !== 'expired')
        place = announcePlace(plan, resources, placeInQueue(attempt.votes, plan.quorum), place, arrivedAt);
      waiter ??= new ReleaseWaiter(plan.nodes, plan.clock, request.keys);
      noteRefusal(plan, waiter, attempt);
      const elapsed = plan.clock.now() - began;
      const point = retryPointOf(attempt, attempts, splits, request.queueKeys !== undefined, wait - elapsed);
      const delay = await retryDelay(plan, request, waiter, point, retrySplitsOnly);
      if (delay === undefined) {
        claim.abandoned = true;
        await releaseOnAll(plan, current.keys, current.owner, readersOf(current));
        return { kind: 'failed', attempt, attempts, elapsed, ...wakesOf(waiter) };
      }
      // Not awaited: the next attempt writes another owner value, so on a node that runs this release after
      // that attempt's acquire (unordered: a Cluster's redirects, a re-send) it deletes nothing of it (§7).
      void releaseOnAll(plan, current.keys, current.owner, readersOf(current));
      // A split vote's backoff is deaf to announcements, except a fair waiter's: nobody may overtake it.
      if (delay > 0) await waiter.sleep(delay, signal, !point.split || request.queueKeys !== undefined);
    }
  } finally {
    waiter?.close();
  }
}

/** How a refused attempt ends the waiter's current streak of announcement-triggered attempts (its quiet gap). */
function noteRefusal(
  plan: AcquirePlan,
  waiter: ReleaseWaiter,
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
): void {
  waiter.failedAttempt(
    Math.max(MIN_RELEASE_GAP, plan.retryDelay),
    plan.maxRetryDelay,
    attempt.kind === 'expired' ? undefined : attempt.holderTtl,
    // Refused for another waiter's turn and granted nowhere: honest contention. A split among such refusals is
    // the nodes disagreeing, and its own partial release's announcement must not wake it at once, again and again.
    attempt.votes.some((vote) => vote.outcome === 'busy' && vote.queued === true) &&
      !attempt.votes.some((vote) => vote.outcome === 'acquired'),
  );
}

/**
 * Attempt number `attempts`'s request: every attempt after the first has an owner value of its own (§7); a fair
 * one says how long the call has waited since it came (§18).
 */
function attemptRequest(
  plan: AcquirePlan,
  request: AcquireRequest,
  attempts: number,
  arrivedAt: number,
): AcquireRequest {
  const fresh = attempts === 1 || plan.unsafeReuseOwner;
  if (request.queueKeys === undefined) {
    if (attempts === 1) return request;
    const owner = fresh ? request.owner : nextOwnerValue(request.owner);
    return { ...request, owner, intentTtl: intentTtlOf(request) };
  }
  const owner = fresh ? request.owner : nextOwnerValue(request.owner);
  return { ...request, owner, waited: Math.max(0, Math.round(plan.clock.now() - arrivedAt)) };
}

/** A writer refused at least once may have left its intent: taken back once its acquisition ended (§15). */
function takeIntentBack(plan: AcquirePlan, request: AcquireRequest): Promise<void> {
  if (request.mode === 'read' || !request.intentKeys || !intentTtlOf(request)) return Promise.resolve();
  return clearIntents(plan, request.intentKeys, request.intent ?? request.owner, request.queueKeys);
}

/**
 * One attempt (docs/DESIGN.md §1 steps 1–4, plus the fencing write-back of §5). The validity clock starts
 * before the first command is sent; with fencing it is checked only once a quorum has taken the token, so
 * the elapsed time covers both round trips. `settleFailure`: a refused attempt waits for every node's answer
 * (within the node timeout), so its votes show a split (see `retrySplitsOnly`).
 */
export async function attemptAcquire(
  plan: AcquirePlan,
  request: AcquireRequest,
  claim: OwnerClaim,
  settleFailure = false,
): Promise<Attempt> {
  const { nodes, clock, quorum, clocks } = plan;
  const start = clock.now();
  const result = await askNodes<CountedReply, AcquireReply>(
    plan,
    'acquire',
    (node) => node.acquire(request),
    {
      needed: quorum,
      isYes: isAcquired,
      settleFailure,
      onLate: (index, answer) => undoLate(nodes[index], answer, request, claim),
    },
    clocks ? stepJudge(clocks, start, Math.max(request.guardWindow, request.ttl)) : checkedAcquireReply,
  );
  if (!result.success) {
    return classify(
      plan,
      votesOf(nodes, result.answers, (reply) => voteOfReply(reply, request.guardWindow)),
    );
  }

  let token: number | undefined;
  if (request.fenceKeys.length > 0) {
    token = 0;
    for (const answer of result.answers) {
      if (answer.status === 'value' && answer.value.outcome === 'acquired')
        token = Math.max(token, answer.value.token);
    }
    const fenced = token;
    const writeBack = await askNodes(
      plan,
      'fence',
      (node) => node.fence(request.keys, request.fenceKeys, request.owner, fenced, readersOf(request)),
      { needed: quorum, isYes: isTrue },
      checkedFence,
    );
    if (!writeBack.success) {
      return {
        kind: 'unavailable',
        votes: votesOf(nodes, writeBack.answers, (written) => (written ? ACQUIRED : NOT_OWNER)),
        holderTtl: undefined,
        detail: messages.fenceShort(writeBack.yes, quorum),
      };
    }
  }
  const deadline = validUntil(start, request.ttl, plan.driftFactor);
  // The unsafe hook exists only for negative controls: it hands out locks whose validity already ran out.
  if (deadline > clock.now() || plan.unsafeSkipValidityCheck) return { kind: 'acquired', deadline, token };
  return {
    kind: 'expired',
    votes: votesOf(nodes, result.answers, (reply) => voteOfReply(reply, request.guardWindow)),
    elapsed: clock.now() - start,
  };
}

/** The error an acquisition that gave up after `attempts` attempts throws. */
export function failureOf(
  plan: NodeGroup,
  resources: readonly string[],
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
  attempts: number,
  elapsed: number,
  request: AcquireRequest,
): LockBusyError | QuorumUnavailableError {
  if (attempt.kind === 'busy') return new LockBusyError(resources, attempt.votes, attempts, elapsed);
  const { ttl } = request;
  const retryAfter = guardWaitOf(attempt.votes, plan.quorum);
  const guarded = attempt.kind === 'unavailable' && retryAfter !== undefined && attempt.detail === undefined;
  const detail =
    attempt.kind === 'expired'
      ? messages.expiredAtGrant(attempt.elapsed, ttl, driftOf(ttl, plan.driftFactor))
      : guarded
        ? messages.guardRefusal(request.guardWindow, retryAfter)
        : attempt.detail;
  return new QuorumUnavailableError(resources, attempt.votes, attempts, plan.quorum, detail, retryAfter);
}

/** Contention when enough nodes answered for a quorum to be possible; otherwise the nodes are the problem. */
function classify(plan: NodeGroup, votes: NodeVote[]): Attempt {
  let busy = 0;
  let unavailable = 0;
  for (const vote of votes) {
    if (vote.outcome === 'busy') busy++;
    else if (vote.outcome === 'error' || vote.outcome === 'timeout' || vote.outcome === 'refused')
      unavailable++;
  }
  const kind = busy > 0 && plan.nodes.length - unavailable >= plan.quorum ? 'busy' : 'unavailable';
  return { kind, votes, holderTtl: quorumFreeIn(votes, plan.quorum) };
}

/**
 * An "acquired" that came after its attempt was decided: undo it if the claim was abandoned. Every path
 * that abandons a claim also sends a release to every node; on an ordered node that release runs after
 * this acquire, so only unordered nodes need this extra one (docs/DESIGN.md §3).
 */
function undoLate(
  node: LockNode,
  answer: Answer<CountedReply>,
  request: AcquireRequest,
  claim: OwnerClaim,
): void {
  if (node.ordered) return;
  // A grant that did not count after a clock step wrote the keys all the same.
  const wrote =
    answer.status === 'value' && (answer.value.outcome === 'acquired' || answer.value.outcome === 'stepped');
  if (wrote && claim.abandoned) {
    callNode(node, 'release', () => node.release(request.keys, request.owner, readersOf(request))).catch(
      () => undefined,
    );
  }
}

/** Throws what an aborted acquisition throws (the instance closed, or the caller's signal), if aborted. */
export function throwIfAborted(signal: AbortSignal | undefined, resources: readonly string[]): void {
  if (!signal?.aborted) return;
  // quit() aborts the instance's own signal with this error: say the instance closed, not the caller.
  if (signal.reason instanceof RedlockClosedError) throw new RedlockClosedError('acquire', resources);
  throw new AcquireAbortedError(resources, signal.reason);
}

/** A read lock's readers sets (what its fence, extend and release act on); undefined for a writer. */
export function readersOf(request: AcquireRequest): readonly string[] | undefined {
  return request.mode === 'read' ? request.readerKeys : undefined;
}

/** The shortest gap between two attempts that release announcements trigger, in ms (see ReleaseWaiter). */
const MIN_RELEASE_GAP = 5;

const NO_WAKES = Object.freeze({ wokenByRelease: 0, wokenByTimer: 0 });

function wakesOf(waiter: ReleaseWaiter | undefined): { wokenByRelease: number; wokenByTimer: number } {
  return waiter ? { wokenByRelease: waiter.wokenByRelease, wokenByTimer: waiter.wokenByTimer } : NO_WAKES;
}

function isAcquired(reply: CountedReply): boolean {
  return reply.outcome === 'acquired';
}

/**
 * The check of each answer with clock-step detection (docs/DESIGN.md §17): the node's `TIME` in the answer,
 * bracketed by `sent` and its receipt, is compared with the node's last sample; a grant within `window` ms of
 * a step does not count.
 */
function stepJudge(
  clocks: NodeClocks,
  sent: number,
  window: number,
): (node: LockNode, raw: AcquireReply) => CountedReply {
  return (node, raw) => clocks.judge(node.name, checkedAcquireReply(node, raw), sent, window);
}

function checkedFence(node: LockNode, written: unknown): boolean {
  return checkedFlag(node, 'fence', written);
}

function isTrue(value: boolean): boolean {
  return value;
}

function voteOfReply(reply: CountedReply, window: number): VoteOutcome {
  switch (reply.outcome) {
    case 'acquired':
      return ACQUIRED;
    case 'stepped':
      return {
        outcome: 'refused',
        clockStep: reply.step,
        restartedAgo: reply.since,
        guardRemaining: Math.max(0, reply.window - reply.since),
      };
    case 'busy':
      if (reply.position !== undefined) return positionedVote(reply);
      if (reply.readers) return { outcome: 'busy', holderTtl: reply.holderTtl, readers: true };
      return reply.queued
        ? { outcome: 'busy', holderTtl: reply.holderTtl, queued: true }
        : { outcome: 'busy', holderTtl: reply.holderTtl };
    default:
      return {
        outcome: 'refused',
        restartedAgo: reply.uptime,
        guardRemaining: Math.max(0, window - reply.uptime),
      };
  }
}
