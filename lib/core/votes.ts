/**
 * What each node answered: the vote a node casts in one operation, the vote constants every operation
 * reports with, and how votes read in messages (which node did what, and what to do about it).
 */

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
  /** For `busy`: true when readers hold it (a read-write lock); `holderTtl` is then the last reader's. */
  readonly readers?: boolean;
  /**
   * For `busy`, fair waiting (docs/DESIGN.md §18): the lock is free there, but an earlier waiter's turn runs for
   * `holderTtl` more ms.
   */
  readonly queued?: boolean;
  /** For `busy`, fair waiting: this waiter's place in that node's queue, from 1. */
  readonly position?: number;
  /**
   * For `refused` (restart guard): how long ago the node started (or, in the guard's portable mode, since its
   * data was first seen), in ms.
   */
  readonly restartedAgo?: number;
  /** For `refused`: how much longer this node refuses locks, in ms. */
  readonly guardRemaining?: number;
  /**
   * For `refused` after a clock step (docs/DESIGN.md §17): the step of the node's wall clock, in ms (positive:
   * forward); `restartedAgo` is then how long ago the step was seen.
   */
  readonly clockStep?: number;
}

/** A vote without its node name: what an operation's answer means. */
export type VoteOutcome = Omit<NodeVote, 'node'>;

export const ACQUIRED: VoteOutcome = Object.freeze({ outcome: 'acquired' });

export const EXTENDED: VoteOutcome = Object.freeze({ outcome: 'extended' });

export const RELEASED: VoteOutcome = Object.freeze({ outcome: 'released' });

export const NOT_OWNER: VoteOutcome = Object.freeze({ outcome: 'not-owner' });

/** `127.0.0.1:6379 acquired; 127.0.0.1:6380 timeout; 127.0.0.1:6381 error (ECONNREFUSED ...)`. */
export function formatVotes(votes: readonly NodeVote[]): string {
  if (votes.length === 0) return 'none answered';
  return votes
    .map((v) => {
      let text = `${v.node} ${v.outcome}`;
      if (v.error) text += ` (${v.error.message})`;
      if (v.readers && v.holderTtl !== undefined)
        text += ` (held by readers, the last expires in ${v.holderTtl} ms)`;
      else if (v.queued) text += ` (free, an earlier waiter's turn for ${v.holderTtl ?? 0} ms more)`;
      else if (v.holderTtl !== undefined && v.holderTtl >= 0)
        text += ` (holder expires in ${v.holderTtl} ms)`;
      if (v.holderTtl === -1) text += ' (the key has no expiry: it holds other data, not a lock)';
      if (v.clockStep !== undefined) {
        text += ` (its clock stepped ${v.clockStep > 0 ? 'forward' : 'back'} by ${Math.abs(v.clockStep)} ms`;
        text += ` ${v.restartedAgo ?? 0} ms ago, refuses for ${v.guardRemaining ?? 0} ms more)`;
      } else if (v.restartedAgo !== undefined) {
        text += ` (restart guard: up ${v.restartedAgo} ms`;
        text += v.guardRemaining !== undefined ? `, refuses for ${v.guardRemaining} ms more)` : ')';
      }
      return text;
    })
    .join('; ');
}

/** What to do about the node errors seen, one sentence per kind of error. */
export function hintsFor(votes: readonly NodeVote[]): string {
  const hints = new Set<string>();
  for (const vote of votes) {
    const message = vote.error?.message ?? '';
    if (vote.error?.name === 'ForeignDataError') {
      hints.add(FOREIGN_MARKER_HINT);
    } else if (message.startsWith('WRONGTYPE')) {
      hints.add(
        // WRONGTYPE does not say which key; the restart guard's markers are checked by name (ForeignDataError).
        'A key the library uses for locks (a lock, readers, writer-intent or fence key under keyPrefix) holds ' +
          'data of another type: other code uses the same keys; set a distinct keyPrefix.',
      );
    } else if (message.startsWith('READONLY')) {
      hints.add('A node is a read-only replica: list primaries only, each an independent server.');
    } else if (message.startsWith('OOM')) {
      hints.add('A node is out of memory (maxmemory reached): raise maxmemory or free memory on it.');
    }
  }
  const stepped = votes.filter((vote) => vote.clockStep !== undefined).length;
  const guarded = votes.filter((vote) => vote.outcome === 'refused').length - stepped;
  // A node whose marker holds foreign data is reachable and healthy: its error says what to do instead.
  const failing = votes.some(
    (vote) =>
      vote.outcome === 'timeout' || (vote.outcome === 'error' && vote.error?.name !== 'ForeignDataError'),
  );
  if (guarded > 0) hints.add(guardHint(guarded, votes.length));
  if (stepped > 0) hints.add(stepHint(stepped, votes.length));
  if (failing || (guarded + stepped === 0 && hints.size === 0))
    hints.add('Check that a majority of the Redis nodes is reachable and healthy.');
  return [...hints].join(' ');
}

const FOREIGN_MARKER_HINT =
  "A restart-guard marker key holds another application's data (named above), and the library never " +
  'overwrites it: set a keyPrefix that no other application uses.';

/** Why refusals by the restart guard are deliberate, and how to turn it off where that is safe. */
function guardHint(guarded: number, total: number): string {
  return (
    `${guarded} of ${total} nodes refused because of the restart guard: they restarted or are new, and a node ` +
    'that lost its data must not hand out a lock that another owner may still hold, so it refuses for one ' +
    'window (option restartGuard, by default the largest ttl). This is deliberate; acquire() waits it out when ' +
    'it ends within `wait`. For development and tests with fresh nodes, set restartGuard: false.'
  );
}

/** Why a node whose clock stepped refuses for a while, and what to fix on the servers. */
function stepHint(stepped: number, total: number): string {
  return (
    `${stepped} of ${total} nodes granted right after their wall clock stepped: Redis expires keys by that ` +
    'clock, so locks there may have expired early while another owner still holds them, and their grants do ' +
    'not count for one restart-guard window (docs/DESIGN.md §17). Run NTP so that it slews the clock instead ' +
    'of stepping it (chrony: no makestep after start-up; ntpd: -x).'
  );
}
