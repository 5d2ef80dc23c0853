import type { Clock } from './clock';
import { LockBusyError, NodeVote, QuorumUnavailableError } from './errors';
import type { OwnerState } from './lock';
import type { AcquireReply, AcquireRequest, LockNode } from './node';
import { Answer, fanOut } from './quorum';
import { votesOf } from './votes';

/** What an attempt needs from its Redlock instance. */
export interface AttemptContext {
  readonly nodes: readonly LockNode[];
  readonly quorum: number;
  readonly clock: Clock;
  readonly nodeTimeout: number;
  /** The clock-drift allowance for a ttl, in ms. */
  drift(ttl: number): number;
  /** Reports a node's error (events). */
  nodeError(index: number, operation: 'acquire' | 'fence' | 'extend' | 'release', error: Error): void;
  /** Test-only (negative controls): hand out locks even when no validity is left. Never set it otherwise. */
  readonly unsafeSkipValidityCheck?: boolean;
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

/**
 * One attempt (DESIGN §3 steps 1–4, plus the fencing write-back). The validity clock starts before the
 * first command is sent; with fencing it is checked only once a quorum has taken the token, so the elapsed
 * time covers both round trips.
 */
export async function attemptAcquire(
  context: AttemptContext,
  request: AcquireRequest,
  state: OwnerState,
): Promise<Attempt> {
  const { nodes, clock } = context;
  const start = clock.now();
  const result = await fanOut(nodes, (node) => node.acquire(request), {
    clock,
    timeout: context.nodeTimeout,
    needed: context.quorum,
    isYes: (reply) => reply.outcome === 'acquired',
    onLate: (index, answer) => undoLate(nodes[index], answer, request, state),
    onError: (index, error) => context.nodeError(index, 'acquire', error),
  });
  if (!result.success) return classify(context, votesOf(nodes, result.answers, voteOfReply));

  let token: number | undefined;
  if (request.fenceKeys.length > 0) {
    token = 0;
    for (const answer of result.answers) {
      if (answer.status === 'value' && answer.value.outcome === 'acquired')
        token = Math.max(token, answer.value.token);
    }
    const writeBack = await fanOut(
      nodes,
      (node) => node.fence(request.keys, request.fenceKeys, request.owner, token as number),
      {
        clock,
        timeout: context.nodeTimeout,
        needed: context.quorum,
        isYes: (written) => written,
        onError: (index, error) => context.nodeError(index, 'fence', error),
      },
    );
    if (!writeBack.success) {
      const fenceVotes = votesOf(nodes, writeBack.answers, (written) => (written ? FENCED : NOT_OWNER));
      return {
        kind: 'unavailable',
        votes: fenceVotes,
        holderTtl: undefined,
        detail: `the fencing token reached only ${writeBack.yes} of the ${context.quorum} nodes needed`,
      };
    }
  }
  const elapsed = clock.now() - start;
  const drift = context.drift(request.ttl);
  // The unsafe hook exists only for negative controls: it hands out locks whose validity already ran out.
  if (request.ttl - elapsed - drift > 0 || context.unsafeSkipValidityCheck) {
    return { kind: 'acquired', deadline: start + request.ttl - drift, token };
  }
  return { kind: 'expired', votes: votesOf(nodes, result.answers, voteOfReply), elapsed };
}

/** The error an acquisition that gave up after `attempts` attempts throws. */
export function failureOf(
  context: AttemptContext,
  resources: readonly string[],
  attempt: Exclude<Attempt, { kind: 'acquired' }>,
  attempts: number,
  elapsed: number,
  ttl: number,
): LockBusyError | QuorumUnavailableError {
  if (attempt.kind === 'busy') return new LockBusyError(resources, attempt.votes, attempts, elapsed);
  const detail =
    attempt.kind === 'expired'
      ? `the quorum was reached only after ${Math.round(attempt.elapsed)} ms, leaving no validity of the ` +
        `${ttl} ms ttl (drift allowance ${context.drift(ttl)} ms); use a longer ttl or faster nodes`
      : attempt.detail;
  return new QuorumUnavailableError(resources, attempt.votes, attempts, context.quorum, detail);
}

/** Contention when enough nodes answered for a quorum to be possible; otherwise the nodes are the problem. */
function classify(context: AttemptContext, votes: NodeVote[]): Attempt {
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
  const kind = busy > 0 && context.nodes.length - unavailable >= context.quorum ? 'busy' : 'unavailable';
  return { kind, votes, holderTtl };
}

/**
 * An "acquired" that came after its attempt was decided: undo it if nobody wants the keys anymore. Every
 * path that marks the owner done also sends a release to every node; on an ordered node that release runs
 * after this acquire, so only unordered nodes need the extra one (it was 2 of 12 writes per cycle).
 */
function undoLate(
  node: LockNode,
  answer: Answer<AcquireReply>,
  request: AcquireRequest,
  state: OwnerState,
): void {
  if (node.ordered) return;
  if (answer.status === 'value' && answer.value.outcome === 'acquired' && state.done) {
    node.release(request.keys, request.owner).catch(() => undefined);
  }
}

const ACQUIRED: Omit<NodeVote, 'node'> = Object.freeze({ outcome: 'acquired' });
const FENCED: Omit<NodeVote, 'node'> = Object.freeze({ outcome: 'acquired' });
const NOT_OWNER: Omit<NodeVote, 'node'> = Object.freeze({ outcome: 'not-owner' });

function voteOfReply(reply: AcquireReply): Omit<NodeVote, 'node'> {
  switch (reply.outcome) {
    case 'acquired':
      return ACQUIRED;
    case 'busy':
      return { outcome: 'busy', holderTtl: reply.holderTtl };
    default:
      return { outcome: 'refused', restartedAgo: reply.uptime };
  }
}
