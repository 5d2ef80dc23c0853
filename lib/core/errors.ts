import * as messages from './messages';
import { nearestName } from './nearest';
import type { NodeVote } from './votes';

export type { NodeVote } from './votes';

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
    // Empty ones are still there to read, but not printed beside the message (`resources: [], votes: []`).
    if (resources.length === 0) Object.defineProperty(this, 'resources', { enumerable: false });
    if (votes.length === 0) Object.defineProperty(this, 'votes', { enumerable: false });
  }
}

/** A call was given an argument or option it cannot use. Thrown before any Redis traffic. */
export class InvalidArgumentError extends RedlockError {
  constructor(message: string, resources: readonly string[] = []) {
    super(message, resources);
  }
}

/**
 * A semaphore call with another number of permits than the one recorded for the resource (docs/DESIGN.md §14):
 * callers of one resource disagree (a rolling deploy that changes `permits`, or two services sharing a name).
 * Nothing was acquired. The record expires once nobody acquires with it for its ttl.
 */
export class PermitCountMismatchError extends InvalidArgumentError {
  constructor(
    message: string,
    resources: readonly string[],
    /** The number of permits this call asked with. */
    readonly permits: number,
    /** The number recorded on a node (−1: the key holds something else). */
    readonly recorded: number,
  ) {
    super(message, resources);
  }
}

/**
 * An options object has a key the library does not know (usually a misspelling); the default would
 * otherwise be used silently instead.
 */
export class UnknownOptionError extends InvalidArgumentError {
  /** The key that was not recognised. */
  readonly option: string;
  /** The keys that are accepted where it was given. */
  readonly known: readonly string[];
  /** The known key nearest to {@link option} by edit distance, when it looks like a misspelling of it. */
  readonly suggestion: string | undefined;

  constructor(what: string, option: string, known: Iterable<string>) {
    const list = [...known];
    const suggestion = nearestName(option, list);
    super(messages.unknownOption(what, option, list, suggestion));
    this.option = option;
    this.known = list;
    this.suggestion = suggestion;
  }
}

/**
 * A key the library keeps on a node (the restart guard's boot marker `<keyPrefix>!boot` or data-age marker
 * `<keyPrefix>!boot:since`) holds data that is not the library's: another application uses that key name. The
 * node leaves it untouched and takes no lock; this is that node's error vote (`NodeVote.error`).
 */
export class ForeignDataError extends RedlockError {
  constructor(
    /** The node's name. */
    readonly node: string,
    /** The key, as the node named it. */
    readonly key: string,
    /** What the key holds: a Redis type (`hash`, `list`, ...), or `string` for a string of another form. */
    readonly found: string,
  ) {
    super(messages.foreignMarker(key, found));
  }
}

/** The resources are held by another owner and did not become free within the wait budget. */
export class LockBusyError extends RedlockError {
  /** How many attempts were made before giving up. */
  readonly attempts: number;

  constructor(
    resources: readonly string[],
    votes: readonly NodeVote[],
    attempts: number,
    waitedMs: number,
    message = messages.busy(resources, votes, attempts, waitedMs),
  ) {
    super(message, resources, votes);
    this.attempts = attempts;
  }
}

/**
 * `maxWaiting` callers of this instance already wait for these resources: this one was refused at once, without
 * Redis traffic and without waiting (a `LockBusyError`, so `onBusy: 'skip'` skips it; HTTP answers 429).
 */
export class LockQueueFullError extends LockBusyError {
  /** The cap that was reached: how many callers of this instance may wait for the resources at once. */
  readonly maxWaiting: number;

  constructor(resources: readonly string[], maxWaiting: number) {
    super(resources, [], 0, 0, messages.queueFull(resources, maxWaiting));
    this.maxWaiting = maxWaiting;
  }
}

/**
 * Too few nodes answered "yes" for reasons other than contention (errors, timeouts, restart guard), or the
 * answers came so late that no validity was left. The lock was not acquired and every partial key was released.
 */
export class QuorumUnavailableError extends RedlockError {
  /** How many attempts were made before giving up. */
  readonly attempts: number;
  /**
   * When known, in ms: how long until a quorum may take locks again (the restart guard's window left on
   * enough nodes). Undefined when the nodes' errors give no such hint. HTTP answers it as `Retry-After`.
   */
  readonly retryAfter: number | undefined;

  constructor(
    resources: readonly string[],
    votes: readonly NodeVote[],
    attempts: number,
    quorum: number,
    detail?: string,
    retryAfter?: number,
  ) {
    const yes = votes.filter((v) => v.outcome === 'acquired' || v.outcome === 'extended').length;
    super(
      messages.unavailable(
        resources,
        votes,
        attempts,
        detail ?? messages.noQuorum(quorum, votes.length, yes),
      ),
      resources,
      votes,
    );
    this.attempts = attempts;
    this.retryAfter = retryAfter;
  }
}

/**
 * The lock can no longer be guaranteed: its validity ran out, or an extension did not reach a quorum of
 * nodes that still held it. Work done under it may overlap with another holder's.
 */
export class LockLostError extends RedlockError {
  constructor(resources: readonly string[], reason: string, votes: readonly NodeVote[] = []) {
    super(messages.lost(resources, reason), resources, votes);
  }
}

/**
 * The lock was revoked: `revoke()` (from this process or any other) deleted it on the nodes, for `reason`. It is
 * the reason of the holder's `lock.signal`, and what `using()` rejects with once the work settled.
 */
export class LockRevokedError extends LockLostError {
  constructor(
    resources: readonly string[],
    /** What the revocation said (`revoke(resource, { reason })`). */
    readonly reason: string,
  ) {
    super(resources, messages.revoked(reason));
  }
}

/**
 * The application is shutting down: new locks are refused with it, and it is the reason of `lock.signal`
 * for locks still held when shutdown began.
 */
export class ShutdownError extends RedlockError {}

/** The caller's `signal` aborted `acquire()`; any keys written so far are being removed. */
export class AcquireAbortedError extends RedlockError {
  constructor(resources: readonly string[], reason: unknown) {
    super(messages.aborted(resources), resources);
    this.cause = reason;
  }
}

/**
 * The instance was closed with `quit()`: its connections are gone (or no longer its own), so it takes no
 * more locks. Acquisitions still waiting when `quit()` ran end with this error too.
 */
export class RedlockClosedError extends RedlockError {
  constructor(operation: string, resources: readonly string[]) {
    super(messages.closed(operation, resources), resources);
  }
}
