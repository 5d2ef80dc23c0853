/**
 * What one node answered in one attempt. Every failure carries these, so a message can say which node
 * did what instead of an opaque "unable to achieve a quorum".
 */
export interface NodeVote {
  /** The node's name (its address, e.g. `127.0.0.1:6379`). */
  readonly node: string;
  /**
   * - `acquired` / `extended` / `released`: the node did what was asked.
   * - `busy`: another owner holds one of the resources on this node.
   * - `not-owner`: (extend) the key is no longer held by this lock on this node.
   * - `refused`: the node refused because it restarted recently (restart guard).
   * - `error`: the node answered with an error or could not be reached.
   * - `timeout`: no answer within the per-node timeout.
   * - `pending`: not awaited, because the outcome was already decided by the other nodes.
   */
  readonly outcome:
    'acquired' | 'extended' | 'released' | 'busy' | 'not-owner' | 'refused' | 'error' | 'timeout' | 'pending';
  /** For `error`: the cause, as Redis or the client reported it. */
  readonly error?: Error;
  /** For `busy`: the holder's remaining time to live on this node, in ms. */
  readonly holderTtl?: number;
  /** For `refused`: how long ago the node restarted, in ms. */
  readonly restartedAgo?: number;
}

/** The base class of every error this library throws. `instanceof RedlockError` catches them all. */
export class RedlockError extends Error {
  /** The resources the failed call was about (empty when not applicable). */
  readonly resources: readonly string[];
  /** Per-node answers of the last attempt, when the failure involved Redis. */
  readonly votes: readonly NodeVote[];

  constructor(message: string, resources: readonly string[] = [], votes: readonly NodeVote[] = []) {
    super(message);
    this.name = new.target.name;
    this.resources = resources;
    this.votes = votes;
  }
}

/** A call was given an argument or option it cannot use. Thrown before any Redis traffic. */
export class InvalidArgumentError extends RedlockError {
  constructor(message: string) {
    super(message);
  }
}

/** The resources are held by another owner and did not become free within the wait budget. */
export class LockBusyError extends RedlockError {
  /** How many attempts were made before giving up. */
  readonly attempts: number;

  constructor(resources: readonly string[], votes: readonly NodeVote[], attempts: number, waitedMs: number) {
    super(
      `Lock ${formatResources(resources)} is held by another owner ` +
        `(${attempts} attempt${attempts === 1 ? '' : 's'} over ${Math.round(waitedMs)} ms). ` +
        `Nodes: ${formatVotes(votes)}. Wait longer (option \`wait\`) or treat the work as already being done elsewhere.`,
      resources,
      votes,
    );
    this.attempts = attempts;
  }
}

/**
 * Too few nodes answered "yes" for reasons other than contention (errors, timeouts, restart guard), or the
 * answers came so late that no validity was left. The lock was not acquired and every partial key was released.
 */
export class QuorumUnavailableError extends RedlockError {
  /** How many attempts were made before giving up. */
  readonly attempts: number;

  constructor(
    resources: readonly string[],
    votes: readonly NodeVote[],
    attempts: number,
    quorum: number,
    detail?: string,
  ) {
    const yes = votes.filter((v) => v.outcome === 'acquired' || v.outcome === 'extended').length;
    super(
      `Could not lock ${formatResources(resources)}: ` +
        (detail ?? `a quorum of ${quorum} of ${votes.length} nodes is needed, ${yes} agreed`) +
        ` (after ${attempts} attempt${attempts === 1 ? '' : 's'}). Nodes: ${formatVotes(votes)}. ` +
        hintsFor(votes),
      resources,
      votes,
    );
    this.attempts = attempts;
  }
}

/**
 * The lock can no longer be guaranteed: its validity ran out, or an extension did not reach a quorum of
 * nodes that still held it. Work done under it may overlap with another holder's.
 */
export class LockLostError extends RedlockError {
  constructor(resources: readonly string[], reason: string, votes: readonly NodeVote[] = []) {
    super(`Lock ${formatResources(resources)} was lost: ${reason}`, resources, votes);
  }
}

/** What to do about the node errors seen, one sentence per kind of error. */
function hintsFor(votes: readonly NodeVote[]): string {
  const hints = new Set<string>();
  for (const vote of votes) {
    const message = vote.error?.message ?? '';
    if (message.startsWith('WRONGTYPE')) {
      hints.add(
        'A lock key holds data of another type: other code uses the same keys; set a distinct keyPrefix.',
      );
    } else if (message.startsWith('READONLY')) {
      hints.add('A node is a read-only replica: list primaries only, each an independent server.');
    } else if (message.startsWith('OOM')) {
      hints.add('A node is out of memory (maxmemory reached): raise maxmemory or free memory on it.');
    }
  }
  hints.add('Check that a majority of the Redis nodes is reachable and healthy.');
  return [...hints].join(' ');
}

/** The caller's `signal` aborted `acquire()`; any keys written so far are being removed. */
export class AcquireAbortedError extends RedlockError {
  constructor(resources: readonly string[], reason: unknown) {
    super(`Acquiring ${formatResources(resources)} was aborted by the caller's signal.`, resources);
    this.cause = reason;
  }
}

/** `"a"` or `["a", "b"]`, for messages. */
export function formatResources(resources: readonly string[]): string {
  return resources.length === 1 ? JSON.stringify(resources[0]) : JSON.stringify(resources);
}

/** `127.0.0.1:6379 acquired; 127.0.0.1:6380 timeout; 127.0.0.1:6381 error (ECONNREFUSED ...)`. */
export function formatVotes(votes: readonly NodeVote[]): string {
  if (votes.length === 0) return 'none answered';
  return votes
    .map((v) => {
      let text = `${v.node} ${v.outcome}`;
      if (v.error) text += ` (${v.error.message})`;
      if (v.holderTtl !== undefined && v.holderTtl >= 0) text += ` (holder expires in ${v.holderTtl} ms)`;
      if (v.restartedAgo !== undefined) text += ` (node restarted ${v.restartedAgo} ms ago)`;
      return text;
    })
    .join('; ');
}
