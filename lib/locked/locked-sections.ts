import {
  InvalidArgumentError,
  Lock,
  LockBusyError,
  QuorumUnavailableError,
  ShutdownError,
  UsingOptions,
  formatResources,
  normalizeResources,
  withTimeout,
} from '../core';
import type { RedlockCore, RedlockLogger, SectionPort } from '../core';
import * as messages from './locked.messages';
import { currentLock, heldInChain, runInChain } from './call-chain';
import { HeldLocks } from './held-locks';
import type { TickSchedule } from './scheduled-tick';

/** How a locked section ended: it ran (with its value), or it was skipped because the lock was busy. */
export type SectionOutcome<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/** A call of a method scheduled with @nestjs/schedule: which schedule, and when its timer fired (epoch ms). */
export interface ScheduledRun {
  readonly schedule: TickSchedule;
  readonly firedAt: number;
  /** Keep the lock until shortly before the next tick (docs/DESIGN.md §10). */
  readonly oncePerTick: boolean;
  /** The per-call options of a scheduled call (with the schedule's short default wait). */
  readonly options: UsingOptions | undefined;
}

/**
 * The locked sections of one application: what `@Locked` methods and `RedlockService.using()` run through.
 * Keeps the call chain (reentrancy: resources a section already holds are not acquired again) and the
 * locks held through the application, and drains them at shutdown (docs/DESIGN.md §9).
 */
export class LockedSections {
  private readonly held = new HeldLocks();
  private closed = false;
  /** The core instance, through its one entry point for locked sections. */
  private readonly core: SectionPort;

  /**
   * @param redlock the application's core instance.
   * @param log where skipped sections and shutdown are reported (`undefined`: nowhere).
   */
  constructor(
    redlock: RedlockCore,
    private readonly log: RedlockLogger | undefined,
  ) {
    this.core = redlock.sections;
    // However a held lock is released (the service, `lock.release()`, `await using`), shutdown stops waiting
    // for it once its release resolved.
    this.core.onReleased((lock) => this.held.delete(lock));
  }

  /**
   * Runs `work` holding `resources`. Those the call chain already holds are reused; the others are locked
   * through the core (renewal and loss handling are the core's), with `work` running in the call chain.
   * With `onBusy: 'skip'`, a lock busy before `work` started ends as `{ ran: false }` (logged at debug
   * level, naming `where`) instead of rejecting with `LockBusyError`. A scheduled run keeps its lock until
   * shortly before the next tick, and a tick without a quorum is skipped with one warning. The gauges count
   * the section under `template` ('' for direct calls).
   */
  async run<T>(
    resources: readonly string[],
    options: UsingOptions | undefined,
    onBusy: 'throw' | 'skip',
    where: string,
    template: string,
    work: (lock: Lock) => Promise<T>,
    scheduled?: ScheduledRun,
  ): Promise<SectionOutcome<T>> {
    const { missing, holder, readOnly } = heldInChain(this, resources);
    // A write inside a read of the same resource would wait for itself (its own read keeps writers out).
    if (readOnly.length > 0 && (options?.mode ?? 'write') === 'write') {
      throw new InvalidArgumentError(messages.writeInsideRead(where, readOnly));
    }
    if (missing.length === 0)
      return { ran: true, value: await runInChain(this, holder!, () => work(holder!)) };
    this.refuseWhenClosed(missing);
    const settings = this.core.settingsFor(options);
    let lock: Lock;
    try {
      // A tick held by another instance is being run there: only split votes are retried.
      lock = await this.core.lock(missing, settings, scheduled?.oncePerTick === true, template);
    } catch (error) {
      if (onBusy === 'skip' && error instanceof LockBusyError) {
        this.log?.debug?.(messages.skipped(where, missing));
        return { ran: false };
      }
      if (scheduled && error instanceof QuorumUnavailableError) {
        this.log?.warn(messages.tickUnavailable(where, scheduled.schedule.description, error));
        return { ran: false };
      }
      throw error;
    }
    // Kept until the next tick only when the body ran: a tick refused at shutdown is let go at once.
    let started = false;
    const keepFor =
      scheduled?.oncePerTick === true
        ? () => {
            if (!started) return 0;
            const now = Date.now();
            return scheduled.schedule.holdUntil(scheduled.firedAt, now) - now;
          }
        : undefined;
    this.held.add(lock);
    try {
      const value = await this.core.runUnderLock(
        lock,
        settings,
        () => {
          this.refuseWhenClosed(missing); // acquired while shutdown began: let go at once
          started = true;
          return runInChain(this, lock, () => work(lock));
        },
        keepFor,
      );
      return { ran: true, value };
    } finally {
      // After the release (or the hold until the next tick): shutdown waits for exactly this.
      this.held.delete(lock);
    }
  }

  /**
   * Normalises what `acquire()`/`tryAcquire()` asks for, refusing resources the call chain already holds
   * (acquiring them would wait for itself) and any lock once shutdown began.
   */
  acquirable(resources: string | readonly string[]): string[] {
    const list = normalizeResources(resources);
    const { missing } = heldInChain(this, list);
    if (missing.length < list.length) {
      throw new InvalidArgumentError(messages.alreadyHeld(list.filter((r) => !missing.includes(r))));
    }
    this.refuseWhenClosed(list);
    return list;
  }

  /** Tracks a lock acquired outside a section, for shutdown; one that arrives after shutdown began is released. */
  async track(lock: Lock): Promise<Lock> {
    if (this.closed) {
      await this.core.release(lock);
      this.refuseWhenClosed(lock.resources);
    }
    this.held.add(lock);
    return lock;
  }

  /** The innermost lock of the current call chain not released yet (see `RedlockService.current`). */
  current(): Lock | undefined {
    return currentLock(this);
  }

  refuseWhenClosed(resources: readonly string[]): void {
    if (this.closed) throw new ShutdownError(messages.shuttingDown(resources), resources);
  }

  /**
   * Shutdown: refuses new locks from now on; aborts the `signal` of every lock still held (with a
   * `ShutdownError`); waits up to `timeout` ms for the work under them to finish and their locks to be
   * released. Locks still held after that are never released under work that may still be running: their
   * keys are left to expire with their ttl, and they are named in a warning.
   */
  async close(timeout: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const held = this.held.live();
    if (held.length === 0) return;
    this.log?.debug?.(messages.shutdownDraining(held.length));
    for (const lock of held)
      lock.abortSignal(new ShutdownError(messages.shutdownSignal(lock.resources), lock.resources));
    const drained = await withTimeout(
      this.held.whenEmpty(),
      timeout,
      () => new Error('shutdownTimeout'),
    ).then(
      () => true,
      () => false,
    );
    if (!drained) {
      const left = this.held.live().map((lock) => formatResources(lock.resources));
      this.log?.warn(messages.shutdownLeftHeld(timeout, left));
    }
  }
}
