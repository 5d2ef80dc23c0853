import { setMaxListeners } from 'node:events';
import type { AcquirePlan } from './acquire';
import { systemClock } from './clock';
import { connectNodes, sameServerWarnings } from './connect';
import { validateDuration } from './durations';
import { InvalidArgumentError, LockLostError, RedlockClosedError } from './errors';
import { RedlockEventMap, RedlockEventName, RedlockEvents, checkSubscription } from './events';
import { extendOnQuorum } from './extend';
import { HealthReport, probeNodes } from './health';
import { RedlockInternals, RedlockStats, acquirePlanOf, keyPlanOf } from './instance-plan';
import { LeadOptions, TermRunner, runLeadership } from './leadership';
import { LocalQueues } from './local-queue';
import { Lock, LockOwner, ReleaseOutcome, ReleaseResult } from './lock';
import type { LockNode, ReadyState } from './lock-node';
import { LockingContext, lockResources } from './lock-resources';
import * as messages from './messages';
import { callNode } from './node-contract';
import {
  ACQUIRE_OPTION_KEYS,
  AcquireOptions,
  CallSettings,
  RedlockOptions,
  ResolvedOptions,
  USING_OPTION_KEYS,
  UsingOptions,
  guardWindowOf,
  resolveCallOptions,
  resolveOptions,
  usingArguments,
  validateTtl,
} from './options';
import { releaseOnQuorum } from './release';
import { Renewals } from './renewals';
import { normalizeResources } from './resources';
import { LockHost, runUnderLock } from './run-under-lock';

export type { RedlockStats } from './instance-plan';
/** @internal */
export type { RedlockInternals } from './instance-plan';

/**
 * The Redlock algorithm over N independent nodes (docs/DESIGN.md): acquire on a majority within the ttl,
 * hand out only locks with validity left, release everywhere, never touch another owner's keys. This class
 * takes {@link LockNode}s; the `Redlock` of the package's entry point also takes Redis connection strings,
 * options and clients.
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
  private readonly plan: AcquirePlan;
  private readonly events = new RedlockEvents();
  /** The settings of a call without options (validated once). */
  private readonly defaultSettings: CallSettings;
  /** What every acquisition of this instance works with (`lock-resources.ts`). */
  private readonly locking: LockingContext;
  /** What running work under a lock needs of this instance (`run-under-lock.ts`). */
  private readonly host: LockHost;
  private portableNoticed = false;
  /** Aborted by quit(): new calls fail at once, and waiting acquisitions stop. */
  private readonly lifetime = lifetimeController();
  /** Every auto-extended lock of this instance: one renewal timer and one deadline timer for all. */
  private readonly renewals: Renewals;
  /** Releases that resolved at quorum and still wait for their last nodes; quit() lets them finish. */
  private readonly settling = new Set<Promise<unknown>>();
  /** Told of each lock whose release resolved (see `onReleased`). */
  private readonly releaseListeners = new Set<(lock: Lock) => void>();

  /**
   * @param nodes one {@link LockNode} per independent server.
   * @param options defaults for every call; see {@link RedlockOptions}.
   */
  constructor(nodes: readonly LockNode[], options?: RedlockOptions);
  /** @internal With test and simulation hooks. */
  constructor(nodes: readonly LockNode[], options: RedlockOptions | undefined, internals: RedlockInternals);
  constructor(nodes: readonly LockNode[], options: RedlockOptions = {}, internals: RedlockInternals = {}) {
    this.options = resolveOptions(options);
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new InvalidArgumentError(
        `nodes must be a non-empty array of LockNodes, got ${messages.describe(nodes)}.`,
      );
    }
    this.nodes = Object.freeze([...nodes]);
    const clock = internals.clock ?? systemClock;
    this.plan = acquirePlanOf(this.nodes, this.options, this.events, clock, internals);
    this.quorum = this.plan.quorum;
    this.renewals = new Renewals(
      clock,
      (held) => this.extend(held),
      (lost, error) => {
        this.options.logger?.warn(messages.workUnprotected(error.message));
        this.countLost(lost, error);
      },
    );
    this.defaultSettings = resolveCallOptions(undefined, this.options);
    this.locking = Object.freeze({
      plan: this.plan,
      keyPlan: keyPlanOf(this.options, internals),
      waiting: new LocalQueues(clock),
      lifetime: this.lifetime.signal,
      events: this.events,
      stats: this.stats,
      issuer: this,
      refuseKeys: (keys: readonly string[]) => this.refuseKeys(keys),
    });
    this.host = {
      keepAlive: (lock) => this.keepAlive(lock),
      extend: (lock, ttl) => this.extend(lock, ttl),
      release: (lock) => this.release(lock),
      lostDuringWork: (lock, error) => {
        if (lock.markLost(error)) this.countLost(lock, error);
      },
      logger: this.options.logger,
    };
    if (this.nodes.length % 2 === 0) {
      this.options.logger?.warn(messages.evenNodeCount(this.nodes.length, this.quorum));
    }
  }

  /**
   * Subscribes to an event (`acquired`, `released`, `extended`, `lost`, `busy`, `node-error`) for metrics
   * and tracing; returns the function that unsubscribes. Listeners run synchronously and must be quick; an
   * exception in a listener is ignored.
   */
  on<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): () => void {
    checkSubscription(event, listener, true);
    return this.events.on(event, listener);
  }

  /** Removes a listener added with {@link on}. */
  off<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): void {
    checkSubscription(event, listener, false);
    this.events.off(event, listener);
  }

  /**
   * Acquires a lock on every resource, retrying within `wait` ms while they are busy or too few nodes answer.
   * Throws `LockBusyError` or `QuorumUnavailableError` when the budget runs out, and `AcquireAbortedError`
   * when `signal` aborts; every key written along the way has then been removed.
   */
  async acquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    const settings =
      options === undefined ? this.defaultSettings : this.settingsFor(options, ACQUIRE_OPTION_KEYS);
    return (await this.lockResources(normalizeResources(resources), settings, true)) as Lock;
  }

  /**
   * One attempt: resolves the lock, or `null` when another owner holds one of the resources. Throws
   * `QuorumUnavailableError` when too few nodes answered.
   */
  async tryAcquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    const settings = this.settingsFor(options, ACQUIRE_OPTION_KEYS);
    return this.lockResources(normalizeResources(resources), { ...settings, wait: 0 }, false);
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
    const settings = this.settingsFor(options, USING_OPTION_KEYS);
    const lock = (await this.lockResources(normalizeResources(resources), settings, true)) as Lock;
    return this.runUnderLock(lock, settings, () => fn(lock));
  }

  /**
   * Leads `name` among every instance: waits until this instance holds the leadership (a lease: the lock on
   * `name`, fenced, without a time limit on campaigning), then runs `work(lease)` with the lease renewed until
   * `work` returns, and releases it. If the lease is lost meanwhile, `lease.signal` aborts: `work` must stop
   * acting as leader then; once it settles, this instance campaigns again and runs `work` again under a new
   * lease with a larger `fencingToken` (unless `recampaign: false`). Emits `elected` and `deposed`.
   */
  lead<T>(name: string, work: (lease: Lock) => Promise<T>, options?: LeadOptions): Promise<T>;
  /** @internal With the term runner of the Nest layer (its locked sections: shutdown draining). */
  lead<T>(
    name: string,
    work: (lease: Lock) => Promise<T>,
    options: LeadOptions | undefined,
    runTerm: TermRunner,
  ): Promise<T>;
  lead<T>(
    name: string,
    work: (lease: Lock) => Promise<T>,
    options?: LeadOptions,
    runTerm: TermRunner = (termOptions, termWork) => this.using(name, termOptions, termWork),
  ): Promise<T> {
    return runLeadership(runTerm, this.events, name, work, options);
  }

  /**
   * @internal The effective settings of one call: its options validated against `known` and completed with
   * the instance's. For the Nest layer, which validates once and locks resources it already normalised.
   */
  settingsFor(options: UsingOptions | undefined, known: ReadonlySet<string>): CallSettings {
    return resolveCallOptions(options, this.options, known);
  }

  /**
   * @internal Acquires already normalised resources with resolved settings: the lock, or — when busy and
   * `throwOnBusy` is false — null; with `retrySplitsOnly`, a lock held by another owner is not waited for.
   * What `acquire`, `tryAcquire`, `using` and the Nest layer run.
   */
  async lockResources(
    resources: string[],
    settings: CallSettings,
    throwOnBusy: boolean,
    retrySplitsOnly = false,
  ): Promise<Lock | null> {
    this.throwIfClosed('acquire', resources);
    return lockResources(this.locking, resources, settings, throwOnBusy, retrySplitsOnly);
  }

  /**
   * @internal Runs `work` while `lock` is held: renews it (per `settings.autoExtend`), then releases it (or,
   * with `keepFor`, keeps it). The loss policy and pass-through rules are those of {@link using}
   * (`run-under-lock.ts`). Used by `using()` and the Nest layer.
   */
  runUnderLock<T>(
    lock: Lock,
    settings: Pick<CallSettings, 'autoExtend' | 'onLockLost'>,
    work: () => Promise<T>,
    keepFor?: () => number,
  ): Promise<T> {
    return runUnderLock(this.host, lock, settings, work, keepFor);
  }

  /**
   * Renews `lock` in the background until the returned function is called (see `using()`); when renewal
   * fails, the lock's `signal` aborts with a {@link LockLostError}.
   */
  keepAlive(lock: Lock): () => void {
    this.checkOwnLock(lock, 'keepAlive');
    return this.renewals.add(lock);
  }

  /**
   * Extends the lock to `ttl` ms (default: its original ttl) counted from this call. Needs a quorum of nodes
   * that still hold it. Throws {@link LockLostError} when the lock has expired, was released, or is no
   * longer held by a quorum; `QuorumUnavailableError` when too few nodes answered (the lock is then
   * unchanged and valid until its old deadline).
   */
  async extend(lock: Lock, ttl?: number): Promise<Lock> {
    this.checkOwnLock(lock, 'extend');
    this.throwIfClosed('extend', lock.resources);
    const newTtl = ttl ?? lock.ttl;
    validateTtl(newTtl, 'ttl');
    if (lock.isReleased) throw new LockLostError(lock.resources, messages.LOST_ALREADY_RELEASED);
    if (lock.remainingTime <= 0) {
      throw lock.lostError ?? new LockLostError(lock.resources, messages.LOST_BEFORE_EXTEND);
    }
    const started = this.plan.clock.now();
    await extendOnQuorum(this.plan, lock, newTtl);
    if (this.events.has('extended')) {
      const elapsed = this.plan.clock.now() - started;
      this.events.emit('extended', { resources: lock.resources, remainingTime: lock.remainingTime, elapsed });
    }
    return lock;
  }

  /**
   * Releases the lock on every node (owner-checked, so another owner's lock is never touched), resolving as
   * soon as a quorum has deleted it; `settled` on the result has every node's answer. Never throws for
   * Redis-side reasons: the result says what each node did; keys that could not be deleted expire with
   * their ttl. Releasing twice is harmless.
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    this.checkOwnLock(lock, 'release');
    if (!lock.markReleased()) return NOTHING_RELEASED;
    const started = this.plan.clock.now();
    let result: ReleaseResult;
    try {
      result = await releaseOnQuorum(this.plan, lock.keys, lock.value, lock.readerKeys);
    } finally {
      for (const listener of this.releaseListeners) listener(lock);
    }
    const { settled } = result;
    this.settling.add(settled);
    void settled.then(() => this.settling.delete(settled));
    if (this.events.has('released')) {
      const now = this.plan.clock.now();
      const { resources } = lock;
      const heldFor = started - lock.grantedAt;
      this.events.emit('released', {
        resources,
        releasedOn: result.releasedOn,
        heldFor,
        elapsed: now - started,
      });
    }
    return result;
  }

  /**
   * @internal Calls `listener` with each lock of this instance once its release resolved, whichever way it
   * was released (`release()`, `lock.release()`, `await using`); returns the function that stops it.
   */
  onReleased(listener: (lock: Lock) => void): () => void {
    this.releaseListeners.add(listener);
    return () => this.releaseListeners.delete(listener);
  }

  /**
   * Waits until the nodes are connected (at most `timeout` ms), starting lazy clients. Resolves with each
   * node's state; never rejects — unreachable nodes only lower the number of votes available.
   */
  async connect(timeout = 5_000): Promise<ReadyState[]> {
    validateDuration(timeout, 'connect() timeout', 1);
    const states = await connectNodes(this.nodes, timeout);
    for (const warning of sameServerWarnings(this.nodes)) this.options.logger?.warn(warning);
    const portable = states.filter((state) => state.guardMode === 'data-age').map((state) => state.node);
    if (portable.length > 0 && this.options.restartGuard !== false && !this.portableNoticed) {
      this.portableNoticed = true;
      this.options.logger?.warn(messages.portableGuard(portable));
    }
    return states;
  }

  /**
   * Probes every node (uptime and round trip, each within `timeout` ms) for health checks. Healthy when a
   * quorum answered and none of that quorum is still inside its restart-guard window.
   */
  async probe(timeout = 1_000): Promise<HealthReport> {
    validateDuration(timeout, 'probe() timeout', 1);
    const window = guardWindowOf(this.options, this.options.ttl);
    return probeNodes(this.nodes, this.quorum, this.plan.clock, timeout, window);
  }

  /**
   * Closes what the nodes opened for this instance: the clients it created, politely (QUIT) where a node
   * answers within `timeout` ms and by disconnecting otherwise, and the subscriber connections of waiters.
   * Clients passed in ready-made are left open.
   */
  async quit(timeout = 1_000): Promise<void> {
    validateDuration(timeout, 'quit() timeout', 0);
    if (!this.lifetime.signal.aborted) this.lifetime.abort(new RedlockClosedError('acquire', []));
    // Releases that resolved at quorum finish on the last nodes first (each within the node timeout).
    if (this.settling.size > 0) await Promise.all(this.settling);
    await Promise.all(
      this.nodes.map(
        (node) => node.close && callNode(node, 'close', () => node.close!(timeout)).catch(() => undefined),
      ),
    );
  }

  /** A node that cannot hold these keys together (a Redis Cluster, keys in several slots) refuses up front. */
  private refuseKeys(keys: readonly string[]): void {
    for (const node of this.nodes) {
      const problem = node.refuseKeys?.(keys);
      if (problem) throw new InvalidArgumentError(problem);
    }
  }

  /** A held lock was declared lost: counted in `stats` and announced (`lost`). */
  private countLost(lock: Lock, error: LockLostError): void {
    this.stats.locksLost++;
    if (this.events.has('lost')) this.events.emit('lost', { resources: lock.resources, error });
  }

  private throwIfClosed(operation: string, resources: readonly string[]): void {
    if (this.lifetime.signal.aborted) throw new RedlockClosedError(operation, resources);
  }

  private checkOwnLock(lock: unknown, operation: string): asserts lock is Lock {
    if (!(lock instanceof Lock)) throw new InvalidArgumentError(messages.notALock(operation, lock));
    if (lock.issuer !== this) throw new InvalidArgumentError(messages.foreignLock(operation, lock.resources));
  }
}

/**
 * The instance's own signal: every acquisition that waits listens to it until it ends, so more than Node's
 * default of 10 at once is normal, not a leak (the listeners are removed as each call ends).
 */
function lifetimeController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

const NOTHING: ReleaseOutcome = Object.freeze({ releasedOn: 0, votes: Object.freeze([]) });
const NOTHING_RELEASED: ReleaseResult = Object.freeze({ ...NOTHING, settled: Promise.resolve(NOTHING) });
