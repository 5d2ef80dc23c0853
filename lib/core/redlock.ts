import type Redis from 'ioredis';
import { Clock, sleep, systemClock } from './clock';
import {
  InvalidArgumentError,
  LockBusyError,
  LockLostError,
  NodeVote,
  QuorumUnavailableError,
  formatResources,
  formatVotes,
} from './errors';
import { Lock, LockOwner, OwnerState, ReleaseResult, newOwnerValue } from './lock';
import type { AcquireReply, LockNode } from './node';
import { NodeSpec, resolveNodes } from './node-specs';
import {
  AcquireOptions,
  RedlockOptions,
  ResolvedOptions,
  describe,
  resolveAcquireOptions,
  resolveOptions,
  validateTtl,
} from './options';
import { Answer, fanOut, quorumOf } from './quorum';
import { lockKey, normalizeResources } from './resources';
import { backoffDelay, nextDelay } from './retry';
import { ReadyState, waitUntilReady } from './readiness';

/** Test and simulation hooks: a different clock and random source. */
export interface RedlockInternals {
  clock?: Clock;
  random?: () => number;
}

/** The result of one acquisition attempt. */
type Attempt =
  | { kind: 'acquired'; deadline: number; votes: NodeVote[] }
  | { kind: 'busy' | 'unavailable'; votes: NodeVote[]; holderTtl: number | undefined }
  | { kind: 'expired'; votes: NodeVote[]; elapsed: number };

/**
 * The Redlock algorithm over N independent Redis nodes (DESIGN §3): acquire on a majority within the ttl,
 * hand out only locks with validity left, release everywhere, never touch another owner's keys.
 */
export class Redlock implements LockOwner {
  /** The nodes, in the order given. */
  readonly nodes: readonly LockNode[];
  /** How many nodes must agree: `floor(N / 2) + 1`. */
  readonly quorum: number;
  /** The effective options (defaults applied). */
  readonly options: ResolvedOptions;
  private readonly owned: Redis[];
  private readonly clock: Clock;
  private readonly random: () => number;

  /**
   * @param nodes connection strings, ioredis options, ioredis clients or {@link LockNode}s — one per
   *   independent Redis server. Clients created here from strings or options are closed by {@link quit}.
   * @param options defaults for every call; see {@link RedlockOptions}.
   */
  constructor(nodes: readonly NodeSpec[], options: RedlockOptions = {}, internals: RedlockInternals = {}) {
    this.options = resolveOptions(options);
    const resolved = resolveNodes(nodes);
    this.nodes = resolved.nodes;
    this.owned = resolved.owned;
    this.quorum = quorumOf(this.nodes.length);
    this.clock = internals.clock ?? systemClock;
    this.random = internals.random ?? Math.random;
    if (this.nodes.length % 2 === 0) {
      this.options.logger?.warn(
        `${this.nodes.length} nodes: an even count tolerates no more failures than ${this.nodes.length - 1} ` +
          `would, and still needs ${this.quorum}. Use an odd number of nodes.`,
      );
    }
  }

  /**
   * Acquires a lock on every resource, retrying within `wait` ms while they are busy or too few nodes answer.
   * Throws {@link LockBusyError} or {@link QuorumUnavailableError} when the budget runs out; every key written
   * along the way has then been removed.
   */
  async acquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    const list = normalizeResources(resources);
    const { ttl, wait } = resolveAcquireOptions(options, this.options);
    return this.acquireWithin(list, ttl, wait, true) as Promise<Lock>;
  }

  /**
   * One attempt: resolves the lock, or `null` when another owner holds one of the resources. Throws
   * {@link QuorumUnavailableError} when too few nodes answered.
   */
  async tryAcquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    const list = normalizeResources(resources);
    const { ttl } = resolveAcquireOptions(options, this.options);
    return this.acquireWithin(list, ttl, 0, false);
  }

  /**
   * Runs `fn` while holding the lock and always releases it afterwards. The result or error of `fn` is
   * passed through unchanged; a failed release never hides it.
   */
  using<T>(resources: string | readonly string[], fn: (lock: Lock) => Promise<T>): Promise<T>;
  using<T>(
    resources: string | readonly string[],
    options: AcquireOptions,
    fn: (lock: Lock) => Promise<T>,
  ): Promise<T>;
  async using<T>(
    resources: string | readonly string[],
    optionsOrFn: AcquireOptions | ((lock: Lock) => Promise<T>),
    maybeFn?: (lock: Lock) => Promise<T>,
  ): Promise<T> {
    const fn = typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn;
    const options = typeof optionsOrFn === 'function' ? undefined : optionsOrFn;
    if (typeof fn !== 'function') {
      throw new InvalidArgumentError(
        'using() needs a function to run while the lock is held, as its last argument.',
      );
    }
    const lock = await this.acquire(resources, options);
    try {
      return await fn(lock);
    } finally {
      await this.release(lock);
    }
  }

  /**
   * Extends the lock to `ttl` ms (default: its original ttl) counted from this call. Needs a quorum of nodes
   * that still hold it. Throws {@link LockLostError} when the lock has expired, was released, or is no
   * longer held by a quorum; {@link QuorumUnavailableError} when too few nodes answered (the lock is then
   * unchanged and valid until its old deadline).
   */
  async extend(lock: Lock, ttl?: number): Promise<Lock> {
    this.checkOwnLock(lock, 'extend');
    const newTtl = ttl ?? lock.ttl;
    validateTtl(newTtl, 'ttl');
    if (lock.isReleased) throw new LockLostError(lock.resources, 'it was already released.');
    if (lock.remainingTime <= 0) {
      throw new LockLostError(lock.resources, 'its validity ran out before the extension was attempted.');
    }
    const start = this.clock.now();
    const result = await fanOut(this.nodes, (node) => node.extend(lock.keys, lock.value, newTtl), {
      clock: this.clock,
      timeout: this.options.nodeTimeout,
      needed: this.quorum,
      isYes: (extended) => extended,
    });
    const votes = this.votesOf(result.answers, (extended) => ({
      outcome: extended ? 'extended' : 'not-owner',
    }));
    if (result.success) {
      const deadline = start + newTtl - this.driftOf(newTtl);
      if (deadline > this.clock.now()) {
        lock.setDeadline(deadline);
        return lock;
      }
      throw new LockLostError(lock.resources, 'the extension took longer than its ttl.', votes);
    }
    const notOwner = votes.filter((vote) => vote.outcome === 'not-owner').length;
    if (this.nodes.length - notOwner < this.quorum) {
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
      this.quorum,
      `could not extend: a quorum of ${this.quorum} of ${this.nodes.length} nodes is needed, ${result.yes} agreed; ` +
        `the lock is unchanged`,
    );
  }

  /**
   * Releases the lock on every node (owner-checked, so another owner's lock is never touched). Never throws
   * for Redis-side reasons: the result says what each node did; keys that could not be deleted expire with
   * their ttl. Releasing twice is harmless.
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    this.checkOwnLock(lock, 'release');
    if (!lock.markReleased()) return { releasedOn: 0, votes: [] };
    return this.releaseKeys(lock.keys, lock.value);
  }

  /**
   * Waits until the clients are connected (at most `timeout` ms), starting those created with
   * `lazyConnect`. Resolves with each node's state; never rejects — unreachable nodes only lower the
   * number of votes available.
   */
  connect(timeout = 5_000): Promise<ReadyState[]> {
    return waitUntilReady(this.nodes, timeout);
  }

  /**
   * Closes the clients this instance created, politely (QUIT) where a node answers within `timeout` ms and
   * by disconnecting otherwise, so a paused or unreachable node never holds up shutdown. Clients passed in
   * ready-made are left open.
   */
  async quit(timeout = 1_000): Promise<void> {
    await Promise.all(this.owned.map((client) => quitClient(client, timeout)));
  }

  private async acquireWithin(resources: string[], ttl: number, wait: number, throwOnBusy: boolean) {
    const keys = resources.map((resource) => lockKey(this.options.keyPrefix, resource));
    const owner = newOwnerValue();
    const state: OwnerState = { done: false };
    const began = this.clock.now();
    for (let attempts = 1; ; attempts++) {
      const attempt = await this.attempt(keys, owner, ttl, state);
      if (attempt.kind === 'acquired') {
        return new Lock(resources, keys, owner, ttl, attempt.deadline, attempts, state, this, this.clock);
      }
      const elapsed = this.clock.now() - began;
      const holderTtl = attempt.kind === 'expired' ? undefined : attempt.holderTtl;
      const backoff = backoffDelay(
        attempts,
        this.options.retryDelay,
        this.options.maxRetryDelay,
        this.random,
      );
      const delay = nextDelay(backoff, wait - elapsed, holderTtl);
      if (delay === undefined) {
        // Final: undo every key this acquisition may have written, including on nodes that timed out.
        state.done = true;
        await this.releaseKeys(keys, owner);
        if (attempt.kind === 'busy' && !throwOnBusy) return null;
        throw this.failure(resources, attempt, attempts, elapsed, ttl);
      }
      // Not awaited: on each node it is sent before the next attempt's acquire, on the same connection.
      void this.releaseKeys(keys, owner);
      await sleep(this.clock, delay);
    }
  }

  /** One attempt (DESIGN §3 steps 1–4). The validity clock starts before the first command is sent. */
  private async attempt(keys: string[], owner: string, ttl: number, state: OwnerState): Promise<Attempt> {
    const start = this.clock.now();
    const result = await fanOut(this.nodes, (node) => node.acquire(keys, owner, ttl), {
      clock: this.clock,
      timeout: this.options.nodeTimeout,
      needed: this.quorum,
      isYes: (reply) => reply.acquired,
      onLate: (index, answer) => this.onLateAcquire(index, answer, keys, owner, state),
    });
    const votes = this.votesOf(result.answers, (reply) =>
      reply.acquired ? ACQUIRED_VOTE : { outcome: 'busy', holderTtl: reply.holderTtl },
    );
    if (result.success) {
      const elapsed = this.clock.now() - start;
      if (ttl - elapsed - this.driftOf(ttl) > 0) {
        return { kind: 'acquired', deadline: start + ttl - this.driftOf(ttl), votes };
      }
      return { kind: 'expired', votes, elapsed };
    }
    let busy = 0;
    let unavailable = 0;
    let holderTtl: number | undefined;
    for (const vote of votes) {
      if (vote.outcome === 'busy') {
        busy++;
        if (vote.holderTtl !== undefined && vote.holderTtl >= 0) {
          holderTtl = holderTtl === undefined ? vote.holderTtl : Math.min(holderTtl, vote.holderTtl);
        }
      } else if (vote.outcome === 'error' || vote.outcome === 'timeout') unavailable++;
    }
    // Contention when enough nodes answered for a quorum to be possible; otherwise the nodes are the problem.
    const kind = busy > 0 && this.nodes.length - unavailable >= this.quorum ? 'busy' : 'unavailable';
    return { kind, votes, holderTtl };
  }

  /** An answer that came after its attempt was decided: undo its write if nobody wants the keys anymore. */
  private onLateAcquire(
    index: number,
    answer: Answer<AcquireReply>,
    keys: string[],
    owner: string,
    state: OwnerState,
  ): void {
    if (answer.status === 'value' && answer.value.acquired && state.done) {
      this.nodes[index].release(keys, owner).catch(() => undefined);
    }
  }

  private async releaseKeys(keys: readonly string[], owner: string): Promise<ReleaseResult> {
    const result = await fanOut(this.nodes, (node) => node.release(keys, owner), {
      clock: this.clock,
      timeout: this.options.nodeTimeout,
      needed: this.nodes.length,
      isYes: () => true,
      waitForAll: true,
    });
    const votes = this.votesOf(result.answers, (deleted) => (deleted > 0 ? RELEASED_VOTE : NOT_OWNER_VOTE));
    return { releasedOn: votes.filter((vote) => vote.outcome === 'released').length, votes };
  }

  private failure(resources: string[], attempt: Attempt, attempts: number, elapsed: number, ttl: number) {
    if (attempt.kind === 'busy') return new LockBusyError(resources, attempt.votes, attempts, elapsed);
    const detail =
      attempt.kind === 'expired'
        ? `the quorum was reached only after ${Math.round(attempt.elapsed)} ms, leaving no validity of the ` +
          `${ttl} ms ttl (drift allowance ${this.driftOf(ttl)} ms); use a longer ttl or faster nodes`
        : undefined;
    return new QuorumUnavailableError(resources, attempt.votes, attempts, this.quorum, detail);
  }

  /** Clock drift allowance for a ttl: `round(ttl × driftFactor) + 2` ms. */
  private driftOf(ttl: number): number {
    return Math.round(ttl * this.options.driftFactor) + 2;
  }

  /** Per-node votes for messages and results; `vote` says what a value means. */
  private votesOf<T>(answers: readonly Answer<T>[], vote: (value: T) => Omit<NodeVote, 'node'>): NodeVote[] {
    return answers.map((answer, index): NodeVote => {
      const node = this.nodes[index].name;
      switch (answer.status) {
        case 'value':
          return { node, ...vote(answer.value) };
        case 'error':
          return { node, outcome: 'error', error: answer.error };
        default:
          return { node, outcome: answer.status };
      }
    });
  }

  private checkOwnLock(lock: unknown, operation: string): asserts lock is Lock {
    if (!(lock instanceof Lock)) {
      throw new InvalidArgumentError(
        `${operation}() needs a Lock returned by acquire(), got ${describe(lock)}.`,
      );
    }
    if (lock.issuer !== this) {
      throw new InvalidArgumentError(
        `${operation}(): this lock on ${formatResources(lock.resources)} was acquired through another Redlock ` +
          'instance (other nodes or key prefix); call it on the instance that acquired it.',
      );
    }
  }
}

async function quitClient(client: Redis, timeout: number): Promise<void> {
  if (client.status !== 'ready') {
    client.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeout);
  });
  await Promise.race([client.quit().catch(() => undefined), gaveUp]);
  clearTimeout(timer);
  client.disconnect();
}

const ACQUIRED_VOTE = Object.freeze({ outcome: 'acquired' as const });
const RELEASED_VOTE = Object.freeze({ outcome: 'released' as const });
const NOT_OWNER_VOTE = Object.freeze({ outcome: 'not-owner' as const });
