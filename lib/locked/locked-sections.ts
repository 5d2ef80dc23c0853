import { setMaxListeners } from 'node:events';
import {
  AcquireAbortedError,
  InvalidArgumentError,
  eitherSignal,
  Lock,
  LockBusyError,
  QuorumUnavailableError,
  ShutdownError,
  UsingOptions,
  formatResources,
  normalizeResources,
  withTimeout,
  type CallSettings,
  type RedlockCore,
  type RedlockLogger,
  type SectionLockRequest,
  type SectionPort,
} from '../core';
import * as messages from './locked.messages';
import { currentLock, heldInChain, runInChain } from './call-chain';
import { HeldLocks } from './held-locks';
import type { TickSchedule } from './scheduled-tick';

/** How a locked section ended: it ran (with its value), or it was skipped because the lock was busy. */
export type SectionOutcome<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/** One call of a locked section: `RedlockService.using()`, a term of `lead()`, a `@Locked` method. */
export interface SectionCall<T> {
  /** Normalised resources. */
  readonly resources: readonly string[];
  readonly options: UsingOptions | undefined;
  /** Who asks, for messages: `'using()'`, `'OrdersService.pay'`, `'lead("x")'`. */
  readonly where: string;
  /** The gauges count the section under this template (`''`, the default: a direct call). */
  readonly template?: string;
  readonly work: (lock: Lock) => Promise<T>;
}

/** A call of a `@Locked` method: it may be skipped when busy, and may be a scheduled run. */
export interface SkippableSectionCall<T> extends SectionCall<T> {
  readonly onBusy: 'throw' | 'skip';
  readonly scheduled?: ScheduledRun;
}

/** A call of a method scheduled with @nestjs/schedule: which schedule, and when its timer fired (epoch ms). */
export interface ScheduledRun {
  readonly schedule: TickSchedule;
  readonly firedAt: number;
  /** Keep the lock until shortly before the next tick (docs/DESIGN.md §10). */
  readonly oncePerTick: boolean;
  /** The per-call options of a scheduled call (with the schedule's short default wait). */
  readonly options: UsingOptions | undefined;
}

/** The acquisition's last attempt was a split vote: it won some nodes, and nobody else a quorum of its own. */
function endedSplit(error: LockBusyError): boolean {
  return error.votes.some((vote) => vote.outcome === 'acquired');
}

/**
 * The locked sections of one application: what `@Locked` methods and `RedlockService.using()` run through.
 * Keeps the call chain (reentrancy: resources a section already holds are not acquired again) and the
 * locks held through the application, and drains them at shutdown (docs/DESIGN.md §9).
 */
export class LockedSections {
  private readonly held = new HeldLocks();
  private closed = false;
  /**
   * Aborted at shutdown: sections still waiting for their lock stop waiting (with a ShutdownError). Every
   * waiting section listens to it: no listener limit (not a leak).
   */
  private readonly closing = new AbortController();
  /** Scheduled methods whose ticks are being skipped for want of a quorum: how many so far. */
  private readonly ticksDown = new Map<string, number>();
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
    setMaxListeners(0, this.closing.signal);
    // However a held lock is released (the service, `lock.release()`, `await using`), shutdown stops waiting
    // for it once its release resolved.
    this.core.onReleased((lock) => this.held.delete(lock));
  }

  /**
   * Runs `call.work` holding `call.resources`. Those the call chain already holds are reused; the others are
   * locked through the core (renewal and loss handling are the core's), with the work running in the call
   * chain. Rejects as the core does when the lock cannot be had (busy, no quorum, aborted).
   */
  async run<T>(call: SectionCall<T>): Promise<T> {
    const entry = this.enter(call);
    if (entry.reused) return runInChain(this, entry.reused, () => call.work(entry.reused));
    const lock = await this.lockFor(this.lockRequest(call, entry.settings, entry.missing, false));
    return this.hold(call, lock, entry.missing, entry.settings, undefined);
  }

  /**
   * {@link run} for `@Locked` methods, which may end without running: with `onBusy: 'skip'`, a lock busy before
   * the work started ends as `{ ran: false }` (logged at debug level, naming `where`) instead of rejecting with
   * `LockBusyError`. A scheduled run keeps its lock until shortly before the next tick, and a tick without a
   * quorum is skipped with one warning.
   */
  async runOrSkip<T>(call: SkippableSectionCall<T>): Promise<SectionOutcome<T>> {
    const entry = this.enter(call);
    if (entry.reused)
      return { ran: true, value: await runInChain(this, entry.reused, () => call.work(entry.reused)) };
    const { scheduled } = call;
    let lock: Lock;
    try {
      // A tick held by another instance is being run there: only split votes are retried.
      const splitsOnly = scheduled?.oncePerTick === true;
      lock = await this.lockFor(this.lockRequest(call, entry.settings, entry.missing, splitsOnly));
    } catch (error) {
      if (call.onBusy === 'skip' && error instanceof LockBusyError) {
        if (scheduled?.oncePerTick && endedSplit(error))
          await this.tickLostToSplit(call.where, scheduled, error);
        else this.log?.debug?.(messages.skipped(call.where, entry.missing));
        return { ran: false };
      }
      if (scheduled && error instanceof QuorumUnavailableError) {
        this.tickSkipped(call.where, scheduled, error);
        return { ran: false };
      }
      throw error;
    }
    if (scheduled) this.tickRan(call.where, scheduled);
    return { ran: true, value: await this.hold(call, lock, entry.missing, entry.settings, scheduled) };
  }

  /**
   * A tick skipped for want of a quorum: one warning when a method's ticks start being skipped (saying what
   * to check), the next ones at debug level only — a 1 s cron during an outage would otherwise warn every
   * second on every instance.
   */
  private tickSkipped(where: string, scheduled: ScheduledRun, error: Error): void {
    const skipped = (this.ticksDown.get(where) ?? 0) + 1;
    this.ticksDown.set(where, skipped);
    const line = messages.tickUnavailable(where, scheduled.schedule.description, error);
    if (skipped === 1) this.log?.warn(messages.ticksDown(line));
    else this.log?.debug?.(line);
  }

  /**
   * A tick given up on a split vote (this instance won some nodes to the end): when no holder has its lock on a
   * quorum either, nobody may run this tick — said at warn level; otherwise another instance runs it (debug).
   */
  private async tickLostToSplit(where: string, scheduled: ScheduledRun, error: LockBusyError): Promise<void> {
    let unclaimed: string[];
    try {
      const seen = await Promise.all(error.resources.map((resource) => this.core.inspect(resource)));
      unclaimed = seen
        .filter((inspection) => inspection.state !== 'held')
        .map((inspection) => inspection.resource);
    } catch {
      unclaimed = [];
    }
    if (unclaimed.length > 0 && !this.closed)
      this.log?.warn(
        messages.tickUnclaimed(where, scheduled.schedule.description, unclaimed, error.attempts),
      );
    else this.log?.debug?.(messages.skipped(where, error.resources));
  }

  /** A tick got its lock: one line when ticks of a method that were being skipped run again, with the count. */
  private tickRan(where: string, scheduled: ScheduledRun): void {
    const skipped = this.ticksDown.get(where);
    if (skipped === undefined) return;
    this.ticksDown.delete(where);
    this.log?.warn(messages.ticksBack(where, scheduled.schedule.description, skipped));
  }

  /** The resources of `call` the chain holds already (one lock then), or those to lock and the call's settings. */
  private enter(
    call: SectionCall<unknown>,
  ): { reused: Lock } | { reused: undefined; missing: string[]; settings: CallSettings } {
    const { missing, holder, readOnly } = heldInChain(this, call.resources);
    // A write inside a read of the same resource would wait for itself (its own read keeps writers out).
    if (readOnly.length > 0 && (call.options?.mode ?? 'write') === 'write') {
      throw new InvalidArgumentError(messages.writeInsideRead(call.where, readOnly));
    }
    if (missing.length === 0 && holder) return { reused: holder };
    this.refuseWhenClosed(missing);
    return { reused: undefined, missing, settings: this.core.settingsFor(call.options) };
  }

  /**
   * Locks through the core, waiting at most until shutdown: a section still waiting then ends with a
   * `ShutdownError` (503 on an HTTP route), not with the instance's `RedlockClosedError` a moment later.
   */
  private async lockFor(request: SectionLockRequest): Promise<Lock> {
    const shutdown = this.closing.signal;
    const waiting = eitherSignal(request.settings.signal, shutdown);
    try {
      return await this.core.lock({ ...request, settings: { ...request.settings, signal: waiting.signal } });
    } catch (error) {
      if (error instanceof AcquireAbortedError && error.cause === shutdown.reason) {
        throw new ShutdownError(messages.shuttingDown(request.resources), request.resources);
      }
      throw error;
    } finally {
      waiting.dispose();
    }
  }

  private lockRequest(
    call: SectionCall<unknown>,
    settings: CallSettings,
    missing: string[],
    retrySplitsOnly: boolean,
  ): SectionLockRequest {
    return { resources: missing, settings, retrySplitsOnly, template: call.template ?? '' };
  }

  /** Runs the work under a lock just acquired, tracked for shutdown until released (or held to the next tick). */
  private async hold<T>(
    call: SectionCall<T>,
    lock: Lock,
    missing: string[],
    settings: CallSettings,
    scheduled: ScheduledRun | undefined,
  ): Promise<T> {
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
      return await this.core.runUnderLock(
        lock,
        settings,
        () => {
          this.refuseWhenClosed(missing); // acquired while shutdown began: let go at once
          started = true;
          return runInChain(this, lock, () => call.work(lock));
        },
        keepFor,
      );
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
    if (this.closed || this.closing.signal.aborted)
      throw new ShutdownError(messages.shuttingDown(resources), resources);
  }

  /**
   * The first step of shutdown: sections still waiting for their lock stop waiting (a `ShutdownError`, 503 on
   * an HTTP route) and new ones are refused, while sections holding their lock run on. Nest closes the HTTP
   * server (which waits for requests in flight) before `onApplicationShutdown`: a request waiting for a lock
   * would otherwise hold `app.close()` up for its whole `wait`.
   */
  stopWaiting(): void {
    if (!this.closing.signal.aborted) this.closing.abort(new ShutdownError(messages.shuttingDown([]), []));
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
    this.stopWaiting();
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
