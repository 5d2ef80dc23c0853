import type Redis from 'ioredis';
import { AcquisitionContext, acquireWithRetries } from './acquisition';
import type { Attempt } from './attempt';
import { keepAlive } from './auto-extend';
import { Clock, systemClock } from './clock';
import {
  InvalidArgumentError,
  LockBusyError,
  LockLostError,
  QuorumUnavailableError,
  formatResources,
  formatVotes,
} from './errors';
import { Lock, LockOwner, OwnerState, ReleaseResult, newOwnerValue } from './lock';
import { IoredisLockNode, LockNode } from './node';
import { NodeSpec, resolveNodes } from './node-specs';
import {
  AcquireOptions,
  CallSettings,
  RedlockOptions,
  ResolvedOptions,
  USING_OPTION_KEYS,
  UsingOptions,
  describe,
  resolveCallOptions,
  resolveOptions,
  validateTtl,
} from './options';
import { fanOut, quorumOf } from './quorum';
import { ReadyState, waitUntilReady } from './readiness';
import { fenceKey, lockKey, normalizeResources } from './resources';
import { quitClient } from './shutdown';
import { votesOf } from './votes';

/** Test and simulation hooks: a different clock and random source. Not for production use. */
export interface RedlockInternals {
  clock?: Clock;
  random?: () => number;
  /**
   * UNSAFE, for negative controls in tests only: hand out locks whose validity already ran out, to prove
   * that the safety checkers catch the overlaps this causes.
   */
  unsafeSkipValidityCheck?: boolean;
}

/** Counters for metrics and tests. */
export interface RedlockStats {
  /** Waiters woken by a release announcement. */
  wokenByRelease: number;
  /** Waiters woken by their timer (holder's ttl or backoff). */
  wokenByTimer: number;
  /** Locks declared lost while held (failed renewal or validity ran out). */
  locksLost: number;
}

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
  /** Counters: how waiters woke, how many locks were lost. */
  readonly stats: RedlockStats = { wokenByRelease: 0, wokenByTimer: 0, locksLost: 0 };
  private readonly owned: Redis[];
  private readonly context: AcquisitionContext;

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
    const driftFactor = this.options.driftFactor;
    this.context = {
      nodes: this.nodes,
      quorum: this.quorum,
      clock: internals.clock ?? systemClock,
      random: internals.random ?? Math.random,
      nodeTimeout: this.options.nodeTimeout,
      retryDelay: this.options.retryDelay,
      maxRetryDelay: this.options.maxRetryDelay,
      drift: (ttl) => Math.round(ttl * driftFactor) + 2,
      releaseEverywhere: (keys, owner) => this.releaseKeys(keys, owner),
      stats: this.stats,
      unsafeSkipValidityCheck: internals.unsafeSkipValidityCheck === true,
    };
    if (this.nodes.length % 2 === 0) {
      this.options.logger?.warn(
        `${this.nodes.length} nodes: an even count tolerates no more failures than ${this.nodes.length - 1} ` +
          `would, and still needs ${this.quorum}. Use an odd number of nodes.`,
      );
    }
  }

  /**
   * Acquires a lock on every resource, retrying within `wait` ms while they are busy or too few nodes answer.
   * Throws {@link LockBusyError} or {@link QuorumUnavailableError} when the budget runs out, and
   * `AcquireAbortedError` when `signal` aborts; every key written along the way has then been removed.
   */
  async acquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    const list = normalizeResources(resources);
    return (await this.acquireWith(list, resolveCallOptions(options, this.options), true)) as Lock;
  }

  /**
   * One attempt: resolves the lock, or `null` when another owner holds one of the resources. Throws
   * {@link QuorumUnavailableError} when too few nodes answered.
   */
  async tryAcquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    const list = normalizeResources(resources);
    const settings = resolveCallOptions(options, this.options);
    return this.acquireWith(list, { ...settings, wait: 0 }, false);
  }

  /**
   * Runs `fn` while holding the lock and always releases it afterwards. The lock is renewed while `fn`
   * runs (`autoExtend`); if it is lost, `lock.signal` aborts and — once `fn` finishes — `using()` rejects
   * with {@link LockLostError} (or only warns, with `onLockLost: 'warn'`). An error thrown by `fn` is passed
   * through unchanged, and a failed release never hides `fn`'s result or error.
   */
  using<T>(resources: string | readonly string[], fn: (lock: Lock) => Promise<T>): Promise<T>;
  using<T>(
    resources: string | readonly string[],
    options: UsingOptions,
    fn: (lock: Lock) => Promise<T>,
  ): Promise<T>;
  async using<T>(
    resources: string | readonly string[],
    optionsOrFn: UsingOptions | ((lock: Lock) => Promise<T>),
    maybeFn?: (lock: Lock) => Promise<T>,
  ): Promise<T> {
    const fn = typeof optionsOrFn === 'function' ? optionsOrFn : maybeFn;
    const options = typeof optionsOrFn === 'function' ? undefined : optionsOrFn;
    if (typeof fn !== 'function') {
      throw new InvalidArgumentError(
        'using() needs a function to run while the lock is held, as its last argument.',
      );
    }
    const list = normalizeResources(resources);
    const settings = resolveCallOptions(options, this.options, USING_OPTION_KEYS);
    const lock = (await this.acquireWith(list, settings, true)) as Lock;
    return this.runHolding(lock, settings, () => fn(lock));
  }

  /**
   * Runs `work` while `lock` is held: renews it (per `settings.autoExtend`), then releases it. The loss
   * policy and pass-through rules are those of {@link using}. Used by `using()` and the NestJS layer.
   */
  async runHolding<T>(
    lock: Lock,
    settings: Pick<CallSettings, 'autoExtend' | 'onLockLost'>,
    work: () => Promise<T>,
  ): Promise<T> {
    const stop = settings.autoExtend ? this.keepAlive(lock) : undefined;
    let result: T;
    try {
      result = await work();
    } finally {
      stop?.();
      await this.release(lock);
    }
    const lost = lock.lostError ?? (lock.remainingTime <= 0 ? this.expiredDuringWork(lock) : undefined);
    if (lost) {
      if (settings.onLockLost === 'throw') throw lost;
      this.options.logger?.warn(`${lost.message} The work finished anyway (onLockLost: 'warn').`);
    }
    return result;
  }

  /**
   * Renews `lock` in the background until the returned function is called (see `using()`); when renewal
   * fails, the lock's `signal` aborts with a {@link LockLostError}.
   */
  keepAlive(lock: Lock): () => void {
    this.checkOwnLock(lock, 'keepAlive');
    return keepAlive(
      lock,
      this.context.clock,
      (held) => this.extend(held),
      (lost, error) => {
        this.stats.locksLost++;
        this.options.logger?.warn(`${error.message} Work still running under it is no longer protected.`);
      },
    );
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
      throw (
        lock.lostError ?? new LockLostError(lock.resources, 'its validity ran out before it was extended.')
      );
    }
    const { clock } = this.context;
    const start = clock.now();
    const result = await fanOut(this.nodes, (node) => node.extend(lock.keys, lock.value, newTtl), {
      clock,
      timeout: this.options.nodeTimeout,
      needed: this.quorum,
      isYes: (extended) => extended,
    });
    if (result.success) {
      const deadline = start + newTtl - this.context.drift(newTtl);
      // Never lengthen a lock that was declared lost meanwhile, nor hand back one already expired.
      if (deadline > clock.now() && !lock.lostError) {
        lock.setDeadline(deadline);
        return lock;
      }
    }
    const votes = votesOf(this.nodes, result.answers, (extended) => (extended ? EXTENDED : NOT_OWNER));
    if (result.success)
      throw new LockLostError(lock.resources, 'the extension took longer than its ttl.', votes);
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
      `could not extend: a quorum of ${this.quorum} of ${this.nodes.length} nodes is needed, ${result.yes} ` +
        'agreed; the lock is unchanged',
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
   * by disconnecting otherwise, so a paused or unreachable node never holds up shutdown; also the
   * subscriber connections it opened for waiters. Clients passed in ready-made are left open.
   */
  async quit(timeout = 1_000): Promise<void> {
    for (const node of this.nodes) if (node instanceof IoredisLockNode) node.close();
    await Promise.all(this.owned.map((client) => quitClient(client, timeout)));
  }

  private async acquireWith(
    resources: string[],
    settings: CallSettings,
    throwOnBusy: boolean,
  ): Promise<Lock | null> {
    const prefix = this.options.keyPrefix;
    const keys = resources.map((resource) => lockKey(prefix, resource));
    const fenceKeys = settings.fencing ? resources.map((resource) => fenceKey(prefix, resource)) : NO_KEYS;
    const owner = newOwnerValue();
    const state: OwnerState = { done: false };
    const request = { keys, fenceKeys, owner, ttl: settings.ttl, guardWindow: settings.guardWindow };
    const result = await acquireWithRetries(
      this.context,
      resources,
      request,
      settings.wait,
      state,
      settings.signal,
    );
    if (result.kind === 'acquired') {
      const { deadline, token } = result.attempt;
      const grant = {
        resources,
        keys,
        fenceKeys,
        value: owner,
        ttl: settings.ttl,
        deadline,
        attempts: result.attempts,
        fencingToken: token,
      };
      return new Lock(grant, state, this, this.context.clock);
    }
    if (result.attempt.kind === 'busy' && !throwOnBusy) return null;
    throw this.failure(resources, result.attempt, result.attempts, result.elapsed, settings.ttl);
  }

  private async releaseKeys(keys: readonly string[], owner: string): Promise<ReleaseResult> {
    const result = await fanOut(this.nodes, (node) => node.release(keys, owner), {
      clock: this.context.clock,
      timeout: this.options.nodeTimeout,
      needed: this.nodes.length,
      isYes: () => true,
      waitForAll: true,
    });
    const votes = votesOf(this.nodes, result.answers, (deleted) => (deleted > 0 ? RELEASED : NOT_OWNER));
    return { releasedOn: votes.filter((vote) => vote.outcome === 'released').length, votes };
  }

  private failure(
    resources: string[],
    attempt: Exclude<Attempt, { kind: 'acquired' }>,
    attempts: number,
    elapsed: number,
    ttl: number,
  ) {
    if (attempt.kind === 'busy') return new LockBusyError(resources, attempt.votes, attempts, elapsed);
    const detail =
      attempt.kind === 'expired'
        ? `the quorum was reached only after ${Math.round(attempt.elapsed)} ms, leaving no validity of the ` +
          `${ttl} ms ttl (drift allowance ${this.context.drift(ttl)} ms); use a longer ttl or faster nodes`
        : attempt.detail;
    return new QuorumUnavailableError(resources, attempt.votes, attempts, this.quorum, detail);
  }

  private expiredDuringWork(lock: Lock): LockLostError {
    const error = new LockLostError(lock.resources, 'its validity ran out while the work was running.');
    if (lock.markLost(error)) this.stats.locksLost++;
    return error;
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

const NO_KEYS: readonly string[] = Object.freeze([]);
const EXTENDED = Object.freeze({ outcome: 'extended' as const });
const RELEASED = Object.freeze({ outcome: 'released' as const });
const NOT_OWNER = Object.freeze({ outcome: 'not-owner' as const });
