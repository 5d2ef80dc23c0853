import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  OnApplicationShutdown,
  OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  AcquireOptions,
  Lock,
  RedlockEventMap,
  RedlockEventName,
  RedlockStats,
  ReleaseResult,
  UsingOptions,
  describe,
  formatResources,
  normalizeResources,
  usingArguments,
  type HealthReport,
  type HoldersOptions,
  type LeadOptions,
  type LockInspection,
  type RevokeOptions,
  type RevokeOutcome,
} from './core';
import { LockedSections } from './locked';
import type { Redlock } from './redis';
import { REDLOCK_RESOLVED_OPTIONS } from './redlock.constants';
import * as messages from './redlock.messages';
import type { LogSink, ResolvedModuleOptions } from './redlock.module-options';

/**
 * Distributed locks for the application: the injectable face of the core `Redlock`, configured by
 * `RedlockModule`. Thin: the algorithm lives in the core, locked sections (reentrancy, held locks,
 * shutdown refusal) in `LockedSections`. What it adds: connecting at start-up, and at shutdown letting the
 * sections finish before closing the connections the module created.
 */
@Injectable()
export class RedlockService implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly redlock: Redlock;
  private readonly log: LogSink | undefined;
  private readonly connectTimeout: number;
  private readonly shutdownTimeout: number;
  private closing: Promise<void> | undefined;

  constructor(
    @Inject(REDLOCK_RESOLVED_OPTIONS) resolved: ResolvedModuleOptions,
    private readonly sections: LockedSections,
    private readonly moduleRef: ModuleRef,
  ) {
    this.redlock = resolved.redlock;
    this.log = resolved.log;
    this.connectTimeout = resolved.connectTimeout;
    this.shutdownTimeout = resolved.shutdownTimeout;
  }

  /**
   * Acquires a lock on every resource, retrying within `wait` while they are busy. Throws `LockBusyError`
   * or `QuorumUnavailableError` when the budget runs out. Not reentrant: a resource already held by the
   * current call chain is refused at once with `InvalidArgumentError` (it would wait for itself); use
   * {@link RedlockService.using} for that. Release the lock with {@link RedlockService.release}.
   */
  async acquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock> {
    const list = this.sections.acquirable(resources);
    return this.sections.track(await this.redlock.acquire(list, options));
  }

  /**
   * One attempt: the lock, or `null` when another owner holds one of the resources. Throws
   * `QuorumUnavailableError` when too few nodes answered. Not reentrant, like {@link RedlockService.acquire}.
   */
  async tryAcquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    const list = this.sections.acquirable(resources);
    const lock = await this.redlock.tryAcquire(list, options);
    return lock && this.sections.track(lock);
  }

  /** Extends a lock to `ttl` ms (default: its original ttl) from now. See the core `Redlock.extend`. */
  extend(lock: Lock, ttl?: number): Promise<Lock> {
    return this.redlock.extend(lock, ttl);
  }

  /** Releases a lock on every node. Never throws for Redis-side reasons; releasing twice is harmless. */
  release(lock: Lock): Promise<ReleaseResult> {
    return this.redlock.release(lock);
  }

  /**
   * Runs `fn` while holding the resources and releases them afterwards; `fn`'s result or error passes
   * through unchanged and a failed release never hides it. Reentrant: resources the current call chain
   * already holds (through `@Locked` or an outer `using`) are not acquired again; only the others are,
   * and `fn` receives the lock of the innermost section holding them.
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
    return this.sections.run({
      resources: normalizeResources(resources),
      options,
      where: 'using()',
      work: fn,
    });
  }

  /**
   * Leads `name` among every instance of the application (see `Redlock.lead`): waits until this instance
   * holds the leadership, runs `work(lease)` with the lease renewed until `work` returns, campaigns again
   * after a loss (unless `recampaign: false`). Runs as a locked section: at shutdown the lease's `signal`
   * aborts, campaigning stops, and the lease is released once `work` settles (within `shutdownTimeout`).
   */
  lead<T>(name: string, work: (lease: Lock) => Promise<T>, options?: LeadOptions): Promise<T> {
    // The name is validated by the core's lead(): here it is only described, whatever it is.
    const where = `lead(${typeof name === 'string' ? formatResources([name]) : describe(name)})`;
    return this.redlock.sections.lead(name, work, options, (termOptions, termWork) =>
      this.sections.run({ resources: [name], options: termOptions, where, work: termWork }),
    );
  }

  /**
   * The innermost lock held by the current async call chain through `@Locked` or `using()` of this
   * application, or `undefined` outside any locked section. A lock whose validity ran out is still
   * returned until it is released (check `isExpired`).
   */
  current(): Lock | undefined {
    return this.sections.current();
  }

  /**
   * Subscribes to the core's events (`acquired`, `released`, `extended`, `lost`, `busy`, `node-error`) for
   * metrics and tracing; returns the function that unsubscribes. See the core `Redlock.on`.
   */
  on<E extends RedlockEventName>(event: E, listener: (payload: RedlockEventMap[E]) => void): () => void {
    return this.redlock.on(event, listener);
  }

  /** Probes every node (round trip, uptime, restart-guard window) within `timeout` ms; see `Redlock.probe`. */
  probe(timeout?: number): Promise<HealthReport> {
    return this.redlock.probe(timeout);
  }

  /** How `resource` is held on every node and on the quorum: holder labels, since when, ttl; see `Redlock.inspect`. */
  inspect(resource: string): Promise<LockInspection> {
    return this.redlock.inspect(resource);
  }

  /** The locks held under the key prefix, each as `inspect()` shows it (SCAN, bounded); see `Redlock.holders`. */
  holders(options?: HoldersOptions): Promise<LockInspection[]> {
    return this.redlock.holders(options);
  }

  /**
   * Deletes `resource`'s lock on every node whoever holds it; the holder in any instance sees its `lock.signal`
   * abort with a `LockRevokedError` carrying `reason` (a `@Locked` method's work too); see `Redlock.revoke`.
   */
  revoke(resource: string, options: RevokeOptions): Promise<RevokeOutcome> {
    return this.redlock.revoke(resource, options);
  }

  /** Counters of the core instance: how waiters woke, how many locks were lost. */
  get stats(): RedlockStats {
    return this.redlock.stats;
  }

  /** Connects to the nodes. Unreachable nodes only log a warning: the application still starts. */
  async onModuleInit(): Promise<void> {
    // Another RedlockService in the same application (RedlockModule imported twice) is found instead of this one.
    if (this.moduleRef.get(RedlockService, { strict: false }) !== this)
      this.log?.warn(messages.importedTwice());
    if (this.log) {
      const outages = new NodeOutageLog(this.log);
      // Once shutdown began, commands still in flight fail as their connections close: that is not news.
      this.redlock.on('node-error', (event) => {
        if (this.closing === undefined) outages.failed(event);
      });
      this.redlock.on('node-recovered', (event) => outages.recovered(event));
    }
    const states = await this.redlock.connect(this.connectTimeout);
    const { quorum } = this.redlock;
    const down = states.filter((state) => !state.ready);
    for (const state of down) {
      this.log?.warn(messages.nodeUnreachable(state.node, state.error, quorum, states.length));
    }
    if (states.length - down.length < quorum) {
      this.log?.warn(messages.quorumUnreachable(states.length - down.length, states.length, quorum));
      return;
    }
    if (down.length === 0) this.log?.debug(messages.connected(states.length, quorum));
    await this.warnWhileGuarded();
  }

  /** Fresh or restarted nodes refuse locks for a while, deliberately: say so once, with when it ends. */
  private async warnWhileGuarded(): Promise<void> {
    if (!this.log) return;
    const report = await this.redlock.probe(this.connectTimeout).catch(() => undefined);
    if (!report) return;
    const waits = report.nodes
      .map((node) => (node.up ? (node.guardRemaining ?? 0) : Infinity))
      .sort((a, b) => a - b);
    const wait = waits[report.quorum - 1];
    if (wait === undefined || !Number.isFinite(wait) || wait <= 0) return;
    const guarded = report.nodes.filter((node) => (node.guardRemaining ?? 0) > 0).map((node) => node.node);
    this.log.warn(messages.startingInGuard(guarded, wait, new Date(Date.now() + wait)));
  }

  /**
   * Stops sections waiting for a lock (they end with a `ShutdownError`, 503 on an HTTP route) and refuses new
   * ones, before Nest closes the HTTP server: that close waits for requests in flight, and one waiting for a
   * busy lock would hold `app.close()` up for its whole `wait`. Sections holding their lock run on.
   */
  beforeApplicationShutdown(): void {
    this.sections.stopWaiting();
  }

  /**
   * Closes the locked sections (within `shutdownTimeout`), then the connections the module created. Runs
   * after the HTTP server stopped and the schedulers were torn down (`onApplicationShutdown` comes last).
   * Later lock requests are refused.
   */
  onApplicationShutdown(): Promise<void> {
    this.closing ??= this.sections.close(this.shutdownTimeout).then(() => this.redlock.quit());
    return this.closing;
  }
}

/** The shortest gap between two "node went bad" warnings of one node, in ms: a flapping node warns once. */
const NODE_WARN_INTERVAL = 10_000;

/**
 * Logs each node's outages without flooding the log: one warning when a node starts failing (saying what to
 * check), none for its next errors, and one line when it answers again, with how many errors it failed with.
 * A node that goes bad again within {@link NODE_WARN_INTERVAL} of its last warning is not warned about again
 * (nor its recovery), so a node failing one operation and answering another cannot flood the log either.
 */
class NodeOutageLog {
  private readonly lastWarned = new Map<string, number>();
  private readonly warned = new Set<string>();

  constructor(private readonly log: LogSink) {}

  failed({ node, operation, error }: RedlockEventMap['node-error']): void {
    if (this.warned.has(node)) return;
    const now = Date.now();
    const last = this.lastWarned.get(node);
    if (last !== undefined && now - last < NODE_WARN_INTERVAL) return;
    this.lastWarned.set(node, now);
    this.warned.add(node);
    this.log.warn(messages.nodeError(node, operation, error));
  }

  recovered({ node, errors, downFor }: RedlockEventMap['node-recovered']): void {
    if (!this.warned.delete(node)) return;
    this.log.warn(messages.nodeBack(node, errors, downFor));
  }
}
