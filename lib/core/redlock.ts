import type Redis from 'ioredis';
import { AcquisitionContext, acquireWithRetries } from './acquisition';
import { failureOf } from './attempt';
import { keepAlive } from './auto-extend';
import { extendOnQuorum } from './extension';
import { HealthReport, probeNodes } from './health';
import { LocalQueues } from './local-queue';
import { Clock, systemClock } from './clock';
import {
  InvalidArgumentError,
  LockBusyError,
  LockLostError,
  QuorumUnavailableError,
  formatResources,
} from './errors';
import { RedlockEventMap, RedlockEventName, RedlockEvents } from './events';
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
  guardWindowOf,
  resolveCallOptions,
  resolveOptions,
  usingArguments,
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
  private readonly events = new RedlockEvents();
  private readonly waiting: LocalQueues;
  /** The settings of a call without options (validated once). */
  private readonly defaultSettings: CallSettings;
  /**
   * Where each node records the run_id it was last checked under: never a lock or fence key (those have
   * '{' right after the prefix).
   */
  private readonly guardKey: string;

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
      nodeError: (index, operation, error) => this.nodeError(index, operation, error),
      unsafeSkipValidityCheck: internals.unsafeSkipValidityCheck === true,
    };
    this.waiting = new LocalQueues(this.context.clock);
    this.defaultSettings = resolveCallOptions(undefined, this.options);
    this.guardKey = `${this.options.keyPrefix}!boot`;
    if (this.nodes.length % 2 === 0) {
      this.options.logger?.warn(
        `${this.nodes.length} nodes: an even count tolerates no more failures than ${this.nodes.length - 1} ` +
          `would, and still needs ${this.quorum}. Use an odd number of nodes.`,
      );
    }
  }

  /**
   * Subscribes to an event (`acquired`, `released`, `extended`, `lost`, `busy`, `node-error`) for metrics
   * and tracing; returns the function that unsubscribes. Listeners run synchronously and must be quick; an
   * exception in a listener is ignored.
   */
  on<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): () => void {
    return this.events.on(event, listener);
  }

  /** Removes a listener added with {@link on}. */
  off<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): void {
    this.events.off(event, listener);
  }

  /**
   * Acquires a lock on every resource, retrying within `wait` ms while they are busy or too few nodes answer.
   * Throws {@link LockBusyError} or {@link QuorumUnavailableError} when the budget runs out, and
   * `AcquireAbortedError` when `signal` aborts; every key written along the way has then been removed.
   */
  async acquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    const list = normalizeResources(resources);
    const settings = options === undefined ? this.defaultSettings : resolveCallOptions(options, this.options);
    return (await this.acquireWith(list, settings, true)) as Lock;
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
    const { options, fn } = usingArguments(optionsOrFn, maybeFn);
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
        if (this.events.has('lost')) this.events.emit('lost', { resources: lost.resources, error });
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
    await extendOnQuorum(this.context, lock, newTtl);
    if (this.events.has('extended')) {
      this.events.emit('extended', { resources: lock.resources, remainingTime: lock.remainingTime });
    }
    return lock;
  }

  /**
   * Releases the lock on every node (owner-checked, so another owner's lock is never touched). Never throws
   * for Redis-side reasons: the result says what each node did; keys that could not be deleted expire with
   * their ttl. Releasing twice is harmless.
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    this.checkOwnLock(lock, 'release');
    if (!lock.markReleased()) return { releasedOn: 0, votes: [] };
    const result = await this.releaseKeys(lock.keys, lock.value);
    if (this.events.has('released')) {
      this.events.emit('released', { resources: lock.resources, releasedOn: result.releasedOn });
    }
    return result;
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
   * Probes every node (uptime and round trip, each within `timeout` ms) for health checks. Healthy when a
   * quorum answered and none of that quorum is still inside its restart-guard window.
   */
  probe(timeout = 1_000): Promise<HealthReport> {
    const window = guardWindowOf(this.options, this.options.ttl);
    return probeNodes(this.nodes, this.quorum, this.context.clock, timeout, window);
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
    const request = {
      keys,
      fenceKeys,
      owner,
      ttl: settings.ttl,
      guardWindow: settings.guardWindow,
      guardKey: this.guardKey,
    };
    const began = this.context.clock.now();
    const attempt = (wait: number) =>
      acquireWithRetries(this.context, resources, request, wait, state, settings.signal);
    // One contender per key set in this process; the others queue locally (see LocalQueues). A single
    // attempt (tryAcquire, wait 0) never queues. Time spent queued counts against the wait budget.
    const result =
      settings.wait > 0
        ? await this.waiting.run(keySetId(keys), settings.wait, settings.signal, (queuedFor) =>
            attempt(Math.max(0, settings.wait - queuedFor)),
          )
        : await attempt(0);
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
      if (this.events.has('acquired')) {
        const elapsed = this.context.clock.now() - began;
        this.events.emit('acquired', { resources, attempts: result.attempts, elapsed, fencingToken: token });
      }
      return new Lock(grant, state, this, this.context.clock);
    }
    if (result.attempt.kind === 'busy' && this.events.has('busy')) {
      this.events.emit('busy', { resources, attempts: result.attempts, waited: result.elapsed });
    }
    if (result.attempt.kind === 'busy' && !throwOnBusy) return null;
    throw failureOf(this.context, resources, result.attempt, result.attempts, result.elapsed, settings.ttl);
  }

  private async releaseKeys(keys: readonly string[], owner: string): Promise<ReleaseResult> {
    const result = await fanOut(this.nodes, (node) => node.release(keys, owner), {
      clock: this.context.clock,
      timeout: this.options.nodeTimeout,
      needed: this.nodes.length,
      isYes: () => true,
      waitForAll: true,
      onError: (index, error) => this.nodeError(index, 'release', error),
    });
    const votes = votesOf(this.nodes, result.answers, (deleted) => (deleted > 0 ? RELEASED : NOT_OWNER));
    return { releasedOn: votes.filter((vote) => vote.outcome === 'released').length, votes };
  }

  private expiredDuringWork(lock: Lock): LockLostError {
    const error = new LockLostError(lock.resources, 'its validity ran out while the work was running.');
    if (lock.markLost(error)) {
      this.stats.locksLost++;
      if (this.events.has('lost')) this.events.emit('lost', { resources: lock.resources, error });
    }
    return error;
  }

  private nodeError(
    index: number,
    operation: RedlockEventMap['node-error']['operation'],
    error: Error,
  ): void {
    if (this.events.has('node-error')) {
      this.events.emit('node-error', { node: this.nodes[index].name, operation, error });
    }
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

/**
 * One id per set of keys, whatever their order. Two sets sharing an id (a resource name containing '}\n')
 * would only take turns in the local queue; the locks themselves stay independent.
 */
function keySetId(keys: readonly string[]): string {
  return keys.length === 1 ? keys[0] : [...keys].sort().join('\n');
}
const RELEASED = Object.freeze({ outcome: 'released' as const });
const NOT_OWNER = Object.freeze({ outcome: 'not-owner' as const });
