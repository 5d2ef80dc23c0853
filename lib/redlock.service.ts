import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import {
  AcquireOptions,
  InvalidArgumentError,
  Lock,
  LockBusyError,
  Redlock,
  RedlockError,
  RedlockEventMap,
  RedlockEventName,
  RedlockStats,
  ReleaseResult,
  UsingOptions,
} from './core';
import type { HealthReport } from './core';
import { usingArguments } from './core/options';
import { normalizeResources } from './core/resources';
import { HeldLocks } from './held-locks';
import { currentLock, heldInChain, runHolding } from './lock-context';
import { REDLOCK_MODULE_OPTIONS, RUN_LOCKED, SKIPPED } from './redlock.constants';
import type { RedlockModuleOptions } from './redlock.interfaces';
import * as messages from './redlock.messages';
import { LogSink, resolveModuleOptions } from './redlock.options';

/**
 * Distributed locks for the application: the injectable face of the core `Redlock`, configured by
 * `RedlockModule`. Thin: the algorithm lives in the core. What it adds: the lock context of the current
 * call chain (reentrancy, {@link RedlockService.current}), connecting at start-up, and releasing the locks
 * still held at shutdown before closing the connections it created.
 */
@Injectable()
export class RedlockService implements OnModuleInit, OnApplicationShutdown {
  private readonly redlock: Redlock;
  private readonly log: LogSink | undefined;
  private readonly connectTimeout: number;
  private readonly shutdownTimeout: number;
  private readonly held = new HeldLocks();
  private closed = false;

  constructor(@Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions) {
    const resolved = resolveModuleOptions(options);
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
    return this.acquireTracked(this.refuseHeldInChain(resources), options);
  }

  /**
   * One attempt: the lock, or `null` when another owner holds one of the resources. Throws
   * `QuorumUnavailableError` when too few nodes answered. Not reentrant, like {@link RedlockService.acquire}.
   */
  async tryAcquire(resources: string | readonly string[], options?: AcquireOptions): Promise<Lock | null> {
    const list = this.refuseHeldInChain(resources);
    this.refuseWhenClosed(list);
    const lock = await this.redlock.tryAcquire(list, options);
    return lock && this.track(lock);
  }

  /** Extends a lock to `ttl` ms (default: its original ttl) from now. See the core `Redlock.extend`. */
  extend(lock: Lock, ttl?: number): Promise<Lock> {
    return this.redlock.extend(lock, ttl);
  }

  /** Releases a lock on every node. Never throws for Redis-side reasons; releasing twice is harmless. */
  release(lock: Lock): Promise<ReleaseResult> {
    this.held.delete(lock);
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
    return this[RUN_LOCKED](resources, options, 'throw', 'using()', fn) as Promise<T>;
  }

  /**
   * The innermost lock held by the current async call chain through `@Locked` or `using()` of this
   * service, or `undefined` outside any locked section. A lock whose validity ran out is still returned
   * until it is released (check `isExpired`).
   */
  current(): Lock | undefined {
    return currentLock(this);
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

  /** Counters of the core instance: how waiters woke, how many locks were lost. */
  get stats(): RedlockStats {
    return this.redlock.stats;
  }

  /** Connects to the nodes. Unreachable nodes only log a warning: the application still starts. */
  async onModuleInit(): Promise<void> {
    if (this.log) this.redlock.on('node-error', nodeErrorWarner(this.log));
    const states = await this.redlock.connect(this.connectTimeout);
    const { quorum } = this.redlock;
    const down = states.filter((state) => !state.ready);
    for (const state of down) {
      this.log?.warn(messages.nodeUnreachable(state.node, state.error, quorum, states.length));
    }
    if (states.length - down.length < quorum) {
      this.log?.warn(messages.quorumUnreachable(states.length - down.length, states.length, quorum));
    } else if (down.length === 0) {
      this.log?.debug(messages.connected(states.length, quorum));
    }
  }

  /**
   * Releases the locks still held (within `shutdownTimeout`), then closes the connections the module
   * created. Runs after the HTTP server stopped and the schedulers were torn down (`onApplicationShutdown`
   * comes last), so only work that outlived them loses its lock early. Later lock requests are refused.
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const locks = this.held.drain();
    if (locks.length > 0) {
      this.log?.debug(messages.shutdownReleasing(locks.length));
      const releases = Promise.allSettled(locks.map((lock) => this.redlock.release(lock)));
      if (!(await settlesWithin(releases, this.shutdownTimeout))) {
        this.log?.warn(messages.shutdownTimedOut(this.shutdownTimeout));
      }
    }
    await this.redlock.quit();
  }

  /**
   * @internal What `@Locked` and `using()` run on. Resources the chain already holds are reused; the others
   * are locked through the core's `using()` (so renewal and loss handling are the core's), with `work`
   * running in the lock context. With `onBusy: 'skip'`, a lock busy before `work` started resolves
   * {@link SKIPPED} (logged at debug level, naming `where`) instead of rejecting with `LockBusyError`.
   */
  async [RUN_LOCKED]<T>(
    resources: string | readonly string[],
    options: UsingOptions | undefined,
    onBusy: 'throw' | 'skip',
    where: string,
    work: (lock: Lock) => Promise<T>,
  ): Promise<T | typeof SKIPPED> {
    const list = normalizeResources(resources);
    const { missing, holder } = heldInChain(this, list);
    if (missing.length === 0) return runHolding(this, holder!, () => work(holder!));
    this.refuseWhenClosed(missing);
    let started = false;
    try {
      return await this.redlock.using(missing, options ?? {}, async (lock) => {
        started = true;
        this.refuseWhenClosed(missing); // acquired while shutdown released the others: let go at once
        this.held.add(lock);
        try {
          return await runHolding(this, lock, () => work(lock));
        } finally {
          this.held.delete(lock);
        }
      });
    } catch (error) {
      if (!started && onBusy === 'skip' && error instanceof LockBusyError) {
        this.log?.debug(messages.skipped(where, missing));
        return SKIPPED;
      }
      throw error;
    }
  }

  private async acquireTracked(resources: readonly string[], options: AcquireOptions | undefined) {
    this.refuseWhenClosed(resources);
    return this.track(await this.redlock.acquire(resources, options));
  }

  /** Tracks a new lock for shutdown; one that arrives after shutdown began is released at once. */
  private async track(lock: Lock): Promise<Lock> {
    if (this.closed) {
      await this.redlock.release(lock);
      this.refuseWhenClosed(lock.resources);
    }
    this.held.add(lock);
    return lock;
  }

  private refuseHeldInChain(resources: string | readonly string[]): string[] {
    const list = normalizeResources(resources);
    const { missing } = heldInChain(this, list);
    if (missing.length < list.length) {
      throw new InvalidArgumentError(messages.alreadyHeld(list.filter((r) => !missing.includes(r))));
    }
    return list;
  }

  private refuseWhenClosed(resources: readonly string[]): void {
    if (this.closed) throw new RedlockError(messages.shuttingDown(resources), resources);
  }
}

/** How often one node's errors may be logged as a warning, in ms; the ones in between are counted. */
const NODE_ERROR_WARN_INTERVAL = 10_000;

/**
 * A `node-error` listener that warns about each node's errors without flooding the log: at most one warning
 * per node per interval, saying how many errors the interval held.
 */
function nodeErrorWarner(log: LogSink): (event: RedlockEventMap['node-error']) => void {
  const lastWarned = new Map<string, { at: number; suppressed: number }>();
  return ({ node, operation, error }) => {
    const now = Date.now();
    const entry = lastWarned.get(node);
    if (entry && now - entry.at < NODE_ERROR_WARN_INTERVAL) {
      entry.suppressed++;
      return;
    }
    log.warn(messages.nodeError(node, operation, error, entry?.suppressed ?? 0));
    lastWarned.set(node, { at: now, suppressed: 0 });
  };
}

/** Whether `promise` settled within `ms`; the timer never outlives the call. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
