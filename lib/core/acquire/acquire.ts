import {
  AcquireAbortedError,
  LockBusyError,
  NodeVote,
  QuorumUnavailableError,
  RedlockClosedError,
} from '../errors';
import { Answer, NodeGroup, askNodes, votesOf } from '../nodes';
import { OwnerClaim, nextOwnerValue } from '../lock';
import type { AcquireReply, AcquireRequest, LockNode } from '../nodes';
import * as messages from '../messages';
import { ACQUIRED, NOT_OWNER, VoteOutcome } from '../votes';
import { releaseOnAll } from '../release';
import { callNode, checkedAcquireReply, checkedFlag } from '../nodes';
import { ReleaseWaiter } from './release-waiter';
import { backoffDelay, nextDelay } from './retry';
import { driftOf, validUntil } from '../validity';

/** What an acquisition works with beyond its nodes: the retry policy. Values only, built once per instance. */
export interface AcquirePlan extends NodeGroup {
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  /** Returns a number in [0, 1): backoff jitter. */
  readonly random: () => number;
  /** @internal Test-only (negative controls): hand out locks even when no validity is left. */
  readonly unsafeSkipValidityCheck: boolean;
  /**
   * @internal Test-only (negative control of docs/DESIGN.md §7): every attempt of an acquisition reuses the
   * first attempt's owner value, as the code did before per-attempt owners.
   */
  readonly unsafeReuseOwner: boolean;
}

/** The result of one acquisition attempt. */
export type Attempt =
  | { readonly kind: 'acquired'; readonly deadline: number; readonly token: number | undefined }
  | {
      readonly kind: 'busy' | 'unavailable';
      readonly votes: NodeVote[];
      readonly holderTtl: number | undefined;
      readonly detail?: string;
    }
  | { readonly kind: 'expired'; readonly votes: NodeVote[]; readonly elapsed: number };

/** How one acquisition ended, and how its waits between attempts ended (for `stats`). */
export type AcquisitionResult = (
  | {
      readonly kind: 'acquired';
      readonly attempt: Extract<Attempt, { kind: 'acquired' }>;
      readonly attempts: number;
      /** The winning attempt's owner value (each attempt has its own, docs/DESIGN.md §7) and its claim. */
      readonly owner: string;
      readonly claim: OwnerClaim;
    }
  | {
      readonly kind: 'failed';
      readonly attempt: Exclude<Attempt, { kind: 'acquired' }>;
      readonly attempts: number;
      readonly elapsed: number;
    }
) & { readonly wokenByRelease: number; readonly wokenByTimer: number };

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
): Promise<AcquisitionResult> {
  const { clock } = plan;
  const began = clock.now();
  // Created on the first failed attempt: an uncontended acquisition never needs one.
  let waiter: ReleaseWaiter | undefined;
  let splits = 0;
  try {
    for (let attempts = 1; ; attempts++) {
      // The previous attempt's keys are already being released: nothing of this acquisition to undo yet.
      throwIfAborted(signal, resources);
      if (waiter) waiter.announced = false;
      const current =
        attempts === 1 || plan.unsafeReuseOwner
          ? request
          : { ...request, owner: nextOwnerValue(request.owner) };
      const claim: OwnerClaim = { abandoned: false };
      const attempt = await attemptAcquire(plan, current, claim);
      if (attempt.kind === 'acquired') {
        return {
          kind: 'acquired',
          attempt,
          attempts,
          owner: current.owner,
          claim,
          wokenByRelease: waiter ? waiter.wokenByRelease : 0,
          wokenByTimer: waiter ? waiter.wokenByTimer : 0,
        };
      }
      // This owner value is never written again: a late "acquired" for it is undone (undoLate, §3).
      claim.abandoned = !plan.unsafeReuseOwner;
      if (signal?.aborted) {
        claim.abandoned = true;
        void releaseOnAll(plan, current.keys, current.owner, readersOf(current));
        throwIfAborted(signal, resources);
      }
      waiter ??= new ReleaseWaiter(plan.nodes, plan.clock, request.keys);
      waiter.failedAttempt(
        Math.max(MIN_RELEASE_GAP, plan.retryDelay),
        plan.maxRetryDelay,
        attempt.kind === 'expired' ? undefined : attempt.holderTtl,
      );

      const elapsed = clock.now() - began;
      const budget = wait - elapsed;
      // A split vote: we won some nodes, other contenders won others, nobody a quorum. Everyone releases and
      // retries; a randomised, growing backoff (deaf to the others' release announcements) breaks the tie.
      const split = attempt.kind === 'busy' && attempt.votes.some((vote) => vote.outcome === 'acquired');
      let delay: number | undefined;
      let guardWait: number | undefined;
      // A lock another owner holds on a quorum is final when only split votes are worth retrying.
      if (budget <= 0 || (retrySplitsOnly && attempt.kind === 'busy' && !split)) delay = undefined;
      else if (split) {
        splits++;
        await waiter.subscribe();
        delay = Math.min(budget, plan.random() * Math.max(1, plan.retryDelay) * 2 ** Math.min(splits, 5));
      } else if (attempt.kind === 'busy' && (await waiter.subscribe()) && !waiter.announced) {
        // Subscribed: sleep until the holder's key expires unless its release is announced first. Right after
        // subscribing, try once more at once: the holder may have released before the subscription was active.
        // Held by readers: come back before this writer's intent (renewed by each attempt) lapses (§15).
        const readers = attempt.votes.some((vote) => vote.outcome === 'busy' && vote.readers === true);
        const cap = readers && request.intentTtl ? request.intentTtl / 2 : Infinity;
        delay = waiter.justSubscribed ? 0 : Math.min(budget, cap, holderDelay(attempt.holderTtl, plan));
      } else if (
        attempt.kind === 'unavailable' &&
        !attempt.votes.some(isFailure) &&
        (guardWait = guardWaitOf(attempt.votes, plan.quorum))
      ) {
        // Only the restart guard keeps the quorum away, for a known time: wait it out when the budget allows,
        // or give up at once (the error says when it ends). With failing nodes too, back off as usual: they
        // may come back sooner.
        // (Uptime is known in whole seconds: the refusal may end up to a second later than it says.)
        delay =
          guardWait <= budget + GUARD_GRANULARITY
            ? Math.min(budget, guardWait + 1 + plan.random() * Math.min(plan.retryDelay, 5))
            : undefined;
      } else if (waiter.announced) {
        delay = Math.min(budget, Math.max(waiter.quietFor, plan.random() * Math.min(plan.retryDelay, 5)));
      } else {
        const backoff = backoffDelay(attempts, plan.retryDelay, plan.maxRetryDelay, plan.random);
        delay = nextDelay(backoff, budget, attempt.kind === 'expired' ? undefined : attempt.holderTtl);
      }
      if (delay === undefined) {
        claim.abandoned = true;
        await releaseOnAll(plan, current.keys, current.owner, readersOf(current));
        return { kind: 'failed', attempt, attempts, elapsed, ...wakesOf(waiter) };
      }
      // Not awaited: the next attempt writes another owner value, so on a node that runs this release after
      // that attempt's acquire (unordered: a Cluster's redirects, a re-send) it deletes nothing of it (§7).
      void releaseOnAll(plan, current.keys, current.owner, readersOf(current));
      if (delay > 0) await waiter.sleep(delay, signal, !split);
    }
  } finally {
    waiter?.close();
  }
}

/**
 * One attempt (docs/DESIGN.md §1 steps 1–4, plus the fencing write-back of §5). The validity clock starts
 * before the first command is sent; with fencing it is checked only once a quorum has taken the token, so
 * the elapsed time covers both round trips.
 */
export async function attemptAcquire(
  plan: AcquirePlan,
  request: AcquireRequest,
  claim: OwnerClaim,
): Promise<Attempt> {
  const { nodes, clock, quorum } = plan;
  const start = clock.now();
  const result = await askNodes(
    plan,
    'acquire',
    (node) => node.acquire(request),
    {
      needed: quorum,
      isYes: isAcquired,
      onLate: (index, answer) => undoLate(nodes[index], answer, request, claim),
    },
    checkedAcquireReply,
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

/** Contention when enough nodes answered for a quorum to be possible; otherwise the nodes are the problem. */
function classify(plan: NodeGroup, votes: NodeVote[]): Attempt {
  let busy = 0;
  let unavailable = 0;
  let holderTtl: number | undefined;
  for (const vote of votes) {
    if (vote.outcome === 'busy') {
      busy++;
      if (vote.holderTtl !== undefined && vote.holderTtl >= 0) {
        holderTtl = holderTtl === undefined ? vote.holderTtl : Math.min(holderTtl, vote.holderTtl);
      }
    } else if (vote.outcome === 'error' || vote.outcome === 'timeout' || vote.outcome === 'refused')
      unavailable++;
  }
  const kind = busy > 0 && plan.nodes.length - unavailable >= plan.quorum ? 'busy' : 'unavailable';
  return { kind, votes, holderTtl };
}

/**
 * An "acquired" that came after its attempt was decided: undo it if the claim was abandoned. Every path
 * that abandons a claim also sends a release to every node; on an ordered node that release runs after
 * this acquire, so only unordered nodes need this extra one (docs/DESIGN.md §3).
 */
function undoLate(
  node: LockNode,
  answer: Answer<AcquireReply>,
  request: AcquireRequest,
  claim: OwnerClaim,
): void {
  if (node.ordered) return;
  if (answer.status === 'value' && answer.value.outcome === 'acquired' && claim.abandoned) {
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

/** How long to wait for a holder whose keys expire in `holderTtl` ms; unknown ttl: the longest backoff. */
export function holderDelay(holderTtl: number | undefined, plan: AcquirePlan): number {
  const jitter = plan.random() * Math.min(plan.retryDelay, 5);
  return (holderTtl === undefined || holderTtl < 0 ? plan.maxRetryDelay : holderTtl + 1) + jitter;
}

/** A read lock's readers sets (what its fence, extend and release act on); undefined for a writer. */
export function readersOf(request: AcquireRequest): readonly string[] | undefined {
  return request.mode === 'read' ? request.readerKeys : undefined;
}

/** Nodes report uptime in whole seconds. */
const GUARD_GRANULARITY = 1_000;
/** The shortest gap between two attempts that release announcements trigger, in ms (see ReleaseWaiter). */
const MIN_RELEASE_GAP = 5;

const NO_WAKES = Object.freeze({ wokenByRelease: 0, wokenByTimer: 0 });

function wakesOf(waiter: ReleaseWaiter | undefined): { wokenByRelease: number; wokenByTimer: number } {
  return waiter ? { wokenByRelease: waiter.wokenByRelease, wokenByTimer: waiter.wokenByTimer } : NO_WAKES;
}

function isFailure(vote: NodeVote): boolean {
  return vote.outcome === 'error' || vote.outcome === 'timeout';
}

function isAcquired(reply: AcquireReply): boolean {
  return reply.outcome === 'acquired';
}

function checkedFence(node: LockNode, written: unknown): boolean {
  return checkedFlag(node, 'fence', written);
}

function isTrue(value: boolean): boolean {
  return value;
}

function voteOfReply(reply: AcquireReply, window: number): VoteOutcome {
  switch (reply.outcome) {
    case 'acquired':
      return ACQUIRED;
    case 'busy':
      return reply.readers
        ? { outcome: 'busy', holderTtl: reply.holderTtl, readers: true }
        : { outcome: 'busy', holderTtl: reply.holderTtl };
    default:
      return {
        outcome: 'refused',
        restartedAgo: reply.uptime,
        guardRemaining: Math.max(0, window - reply.uptime),
      };
  }
}
