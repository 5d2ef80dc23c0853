import { setMaxListeners } from 'node:events';
import { closeNodes, connectInstance, type LockNode, type ReadyState } from './nodes';
import { withTimeout } from './clock';
import { validateDuration } from './durations';
import { InvalidArgumentError, RedlockClosedError } from './errors';
import { RedlockEventMap, RedlockEventName, RedlockEvents, checkSubscription } from './events';
import { extendLock, runUnderLock } from './hold';
import {
  HealthReport,
  probeNodes,
  LockInspection,
  holdersOptions,
  inspectResource,
  listHolders,
  oneResource,
  type HoldersOptions,
  type RevokeOptions,
  type RevokeOutcome,
} from './operate';
import { type RedlockInternals, InstanceParts, nodesOf } from './instance';
import type { RedlockStats } from './stats';
import { LeadOptions, runLeadership, lockResources } from './primitives';
import { Lock, LockOwner, ReleaseResult } from './lock';
import * as messages from './messages';
import {
  type AcquireOptions,
  type CallSettings,
  type RedlockOptions,
  type ResolvedOptions,
  type UsingOptions,
  ACQUIRE_OPTION_KEYS,
  USING_OPTION_KEYS,
  guardWindowOf,
  resolveCallOptions,
  resolveOptions,
  usingArguments,
} from './options';
import { normalizeResources } from './resources';
import type { SectionPort } from './instance-sections';

/**
 * The Redlock algorithm over N independent nodes (docs/DESIGN.md): acquire on a majority within the ttl,
 * hand out only locks with validity left, release everywhere, never touch another owner's keys. A facade:
 * each operation is a room of its own (§0). This class takes {@link LockNode}s; the package's `Redlock`
 * extends it and also takes Redis connection strings, options and clients.
 */
export class RedlockCore implements LockOwner {
  /** The nodes, in the order given. */
  readonly nodes: readonly LockNode[];
  /** How many nodes must agree: `floor(N / 2) + 1`. */
  readonly quorum: number;
  /** The effective options (defaults applied). */
  readonly options: ResolvedOptions;
  /** Counters and gauges: how waiters woke, locks lost, renewals failed, revocations; callers waiting, locks held. */
  readonly stats: RedlockStats;
  /** @internal The Nest layer's locked sections drive this instance through this port only. */
  readonly sections: SectionPort;
  private readonly parts: InstanceParts;
  private readonly events = new RedlockEvents();
  /** The settings of a call without options (validated once). */
  private readonly defaultSettings: CallSettings;
  private portableNoticed = false;
  /** Aborted by quit(): new calls fail at once, and waiting acquisitions stop (no listener limit: not a leak). */
  private readonly lifetime = new AbortController();

  /**
   * @param nodes one {@link LockNode} per independent server.
   * @param options defaults for every call; see {@link RedlockOptions}.
   */
  constructor(nodes: readonly LockNode[], options?: RedlockOptions);
  /** @internal With test and simulation hooks. */
  constructor(nodes: readonly LockNode[], options: RedlockOptions | undefined, internals: RedlockInternals);
  constructor(nodes: readonly LockNode[], options: RedlockOptions = {}, internals: RedlockInternals = {}) {
    this.options = resolveOptions(options);
    this.nodes = nodesOf(nodes);
    setMaxListeners(0, this.lifetime.signal);
    this.parts = new InstanceParts(this, this.events, this.lifetime.signal, internals);
    this.sections = this.parts.sections;
    this.stats = this.parts.stats;
    this.quorum = this.parts.plan.quorum;
    this.defaultSettings = resolveCallOptions(undefined, this.options);
    if (this.nodes.length % 2 === 0) {
      this.options.logger?.warn(messages.evenNodeCount(this.nodes.length, this.quorum));
    }
  }

  /**
   * Subscribes to an event (`acquired`, `released`, `extended`, `lost`, `busy`, `unavailable`, `node-error`,
   * `elected`, `deposed`, `revoked`) for metrics and tracing; returns the function that unsubscribes. Listeners run synchronously
   * and must be quick; an exception in a listener is ignored.
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
      options === undefined
        ? this.defaultSettings
        : resolveCallOptions(options, this.options, ACQUIRE_OPTION_KEYS);
    return (await this.lock(resources, settings)) as Lock;
  }

  /**
   * One attempt: resolves the lock, or `null` when another owner holds one of the resources. Throws
   * `QuorumUnavailableError` when too few nodes answered.
   */
  async tryAcquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    const settings = resolveCallOptions(options, this.options, ACQUIRE_OPTION_KEYS);
    return this.lock(resources, { ...settings, wait: 0 }, false);
  }

  /**
   * Runs `fn` while holding the lock and always releases it afterwards. The lock is renewed while `fn`
   * runs (`autoExtend`); if it is lost, `lock.signal` aborts and — once `fn` finishes — `using()` rejects
   * with `LockLostError` (or only warns, with `onLockLost: 'warn'`). An error thrown by `fn` is passed
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
    const settings = resolveCallOptions(options, this.options, USING_OPTION_KEYS);
    const lock = (await this.lock(resources, settings)) as Lock;
    return runUnderLock(this.parts.host, lock, settings, () => fn(lock));
  }

  /**
   * Leads `name` among every instance: waits until this instance holds the leadership (a lease: the lock on
   * `name`, fenced, without a time limit on campaigning), then runs `work(lease)` with the lease renewed until
   * `work` returns, and releases it. If the lease is lost meanwhile, `lease.signal` aborts: `work` must stop
   * acting as leader then; once it settles, this instance campaigns again and runs `work` again under a new
   * lease with a larger `fencingToken` (unless `recampaign: false`). Emits `elected` and `deposed`.
   */
  lead<T>(name: string, work: (lease: Lock) => Promise<T>, options?: LeadOptions): Promise<T> {
    return runLeadership(
      (term, termWork) => this.using(name, term, termWork),
      this.events,
      name,
      work,
      options,
    );
  }

  /**
   * Renews `lock` in the background until the returned function is called (see `using()`); when renewal
   * fails, the lock's `signal` aborts with a `LockLostError`.
   */
  keepAlive(lock: Lock): () => void {
    this.checkOwnLock(lock, 'keepAlive');
    if (this.lifetime.signal.aborted) throw new RedlockClosedError('keepAlive', lock.resources);
    return this.parts.renewals.add(lock);
  }

  /**
   * Extends the lock to `ttl` ms (default: its original ttl) counted from this call. Needs a quorum of nodes
   * that still hold it. Throws `LockLostError` when the lock has expired, was released, or is no longer held
   * by a quorum; `QuorumUnavailableError` when too few nodes answered (the lock is then unchanged and valid
   * until its old deadline).
   */
  async extend(lock: Lock, ttl?: number): Promise<Lock> {
    this.checkOwnLock(lock, 'extend');
    if (this.lifetime.signal.aborted) throw new RedlockClosedError('extend', lock.resources);
    return extendLock(this.parts.plan, lock, ttl);
  }

  /**
   * Releases the lock on every node (owner-checked, so another owner's lock is never touched), resolving as
   * soon as a quorum has deleted it; `settled` on the result has every node's answer. Never throws for
   * Redis-side reasons: the result says what each node did; keys that could not be deleted expire with
   * their ttl. Releasing twice is harmless.
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    this.checkOwnLock(lock, 'release');
    return this.parts.releases.release(lock);
  }

  /**
   * How `resource` is held on each node (owner label, since when, ttl left, mode or permit, fencing token) and on
   * the quorum (`state`). Read-only, one script call per node (two for a semaphore): docs/DESIGN.md §16.
   */
  async inspect(resource: string): Promise<LockInspection> {
    return inspectResource(this.parts.inspection, oneResource(resource, 'inspect'));
  }

  /** The locks held under the key prefix (resources starting with `prefix`), as {@link inspect} shows each; SCAN. */
  async holders(options: HoldersOptions = {}): Promise<LockInspection[]> {
    const { prefix, limit } = holdersOptions(options);
    return listHolders(this.parts.inspection, prefix, limit);
  }

  /**
   * Deletes `resource`'s lock on every node whoever holds it (writer, readers, permits; never its fence counter,
   * so fencing still rejects the revoked holder's late writes). The holder, in any process, learns it at once:
   * its `lock.signal` aborts with a `LockRevokedError` carrying `reason`. Logged, and emitted as `revoked`.
   */
  async revoke(resource: string, options: RevokeOptions): Promise<RevokeOutcome> {
    return this.parts.revocations.revoke(oneResource(resource, 'revoke'), options);
  }

  /**
   * Waits until the nodes are connected (at most `timeout` ms), starting lazy clients. Resolves with each
   * node's state; never rejects — unreachable nodes only lower the number of votes available.
   */
  async connect(timeout = 5_000): Promise<ReadyState[]> {
    validateDuration(timeout, 'connect() timeout', 1);
    const { clock } = this.parts.plan;
    const began = clock.now();
    // Revocations reach this instance's holders from its first lock on (docs/DESIGN.md §16); waited for within
    // the same `timeout`: a node that is down must not make start-up wait for its subscription's own timeout.
    const listening = this.parts.revocations.listen();
    const connected = await connectInstance(this.nodes, this.options, timeout, this.portableNoticed);
    this.portableNoticed = connected.noticed;
    const left = timeout - (clock.now() - began);
    if (left > 0) await withTimeout(listening, left, () => new Error('subscriptions')).catch(() => undefined);
    return connected.states;
  }

  /**
   * Probes every node (uptime and round trip, each within `timeout` ms) for health checks. Healthy when a
   * quorum answered and none of that quorum is still inside its restart-guard window.
   */
  async probe(timeout = 1_000): Promise<HealthReport> {
    validateDuration(timeout, 'probe() timeout', 1);
    const window = guardWindowOf(this.options, this.options.ttl);
    const { clock, clocks } = this.parts.plan;
    return probeNodes(this.nodes, this.quorum, clock, timeout, window, clocks);
  }

  /**
   * Closes what the nodes opened for this instance: the clients it created, politely (QUIT) where a node
   * answers within `timeout` ms and by disconnecting otherwise, and the subscriber connections of waiters.
   * Clients passed in ready-made are left open. Releases that resolved at quorum finish on their last nodes first.
   */
  async quit(timeout = 1_000): Promise<void> {
    validateDuration(timeout, 'quit() timeout', 0);
    if (!this.lifetime.signal.aborted) this.lifetime.abort(new RedlockClosedError('acquire', []));
    this.parts.revocations.close();
    // Nothing can extend a lock any more: renewals stop; a kept lock's holder is still told at its deadline.
    this.parts.renewals.close();
    // Acquisitions stopped by the abort above remove what they wrote (keys, intents) before the nodes close.
    await Promise.allSettled(this.parts.locking.underWay);
    await this.parts.releases.settle();
    await closeNodes(this.nodes, timeout);
  }

  /** Acquires `resources` (a string or a list, normalised here) with resolved settings; null when busy unless `throwOnBusy`. */
  private lock(resources: string | readonly string[], settings: CallSettings, throwOnBusy = true) {
    return lockResources(this.parts.locking, normalizeResources(resources), settings, throwOnBusy, false);
  }

  private checkOwnLock(lock: unknown, operation: string): asserts lock is Lock {
    if (!(lock instanceof Lock)) throw new InvalidArgumentError(messages.notALock(operation, lock));
    if (lock.issuer !== this) throw new InvalidArgumentError(messages.foreignLock(operation, lock.resources));
  }
}
