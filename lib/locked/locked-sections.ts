import { Inject, Injectable } from '@nestjs/common';
import {
  InvalidArgumentError,
  Lock,
  LockBusyError,
  RedlockError,
  USING_OPTION_KEYS,
  UsingOptions,
  normalizeResources,
  withTimeout,
} from '../core';
import type { Redlock } from '../redis';
import { REDLOCK_RESOLVED_OPTIONS } from '../redlock.constants';
import * as messages from '../redlock.messages';
import type { ResolvedModuleOptions } from '../redlock.module-options';
import { currentLock, heldInChain, runInChain } from './call-chain';
import { HeldLocks } from './held-locks';

/** How a locked section ended: it ran (with its value), or it was skipped because the lock was busy. */
export type SectionOutcome<T> = { readonly ran: true; readonly value: T } | { readonly ran: false };

/**
 * The locked sections of one application: what `@Locked` methods and `RedlockService.using()` run through.
 * Keeps the call chain (reentrancy: resources a section already holds are not acquired again), the locks
 * held through the application (for shutdown), and refuses new locks once the application shuts down.
 */
@Injectable()
export class LockedSections {
  private readonly redlock: Redlock;
  private readonly log: ResolvedModuleOptions['log'];
  private readonly held = new HeldLocks();
  private closed = false;

  constructor(@Inject(REDLOCK_RESOLVED_OPTIONS) resolved: ResolvedModuleOptions) {
    this.redlock = resolved.redlock;
    this.log = resolved.log;
  }

  /**
   * Runs `work` holding `resources`. Those the call chain already holds are reused; the others are locked
   * through the core (renewal and loss handling are the core's), with `work` running in the call chain.
   * With `onBusy: 'skip'`, a lock busy before `work` started ends as `{ ran: false }` (logged at debug
   * level, naming `where`) instead of rejecting with `LockBusyError`.
   */
  async run<T>(
    resources: readonly string[],
    options: UsingOptions | undefined,
    onBusy: 'throw' | 'skip',
    where: string,
    work: (lock: Lock) => Promise<T>,
  ): Promise<SectionOutcome<T>> {
    const { missing, holder } = heldInChain(this, resources);
    if (missing.length === 0)
      return { ran: true, value: await runInChain(this, holder!, () => work(holder!)) };
    this.refuseWhenClosed(missing);
    const settings = this.redlock.settingsFor(options, USING_OPTION_KEYS);
    let lock: Lock;
    try {
      lock = (await this.redlock.lockResources(missing, settings, true)) as Lock;
    } catch (error) {
      if (onBusy === 'skip' && error instanceof LockBusyError) {
        this.log?.debug(messages.skipped(where, missing));
        return { ran: false };
      }
      throw error;
    }
    const value = await this.redlock.runUnderLock(lock, settings, async () => {
      this.refuseWhenClosed(missing); // acquired while shutdown released the others: let go at once
      this.held.add(lock);
      try {
        return await runInChain(this, lock, () => work(lock));
      } finally {
        this.held.delete(lock);
      }
    });
    return { ran: true, value };
  }

  /** Normalises `resources`, refusing those the call chain already holds (acquiring them would wait for itself). */
  refuseHeldInChain(resources: string | readonly string[]): string[] {
    const list = normalizeResources(resources);
    const { missing } = heldInChain(this, list);
    if (missing.length < list.length) {
      throw new InvalidArgumentError(messages.alreadyHeld(list.filter((r) => !missing.includes(r))));
    }
    return list;
  }

  /** Tracks a lock acquired outside a section, for shutdown; one that arrives after shutdown began is released. */
  async track(lock: Lock): Promise<Lock> {
    if (this.closed) {
      await this.redlock.release(lock);
      this.refuseWhenClosed(lock.resources);
    }
    this.held.add(lock);
    return lock;
  }

  /** Stops tracking a lock that is being released. */
  untrack(lock: Lock): void {
    this.held.delete(lock);
  }

  /** The innermost lock of the current call chain not released yet (see `RedlockService.current`). */
  current(): Lock | undefined {
    return currentLock(this);
  }

  refuseWhenClosed(resources: readonly string[]): void {
    if (this.closed) throw new RedlockError(messages.shuttingDown(resources), resources);
  }

  /**
   * Shutdown: refuses new locks from now on and releases the locks still held, within `timeout` ms (the
   * keys of those not released by then expire with their ttl).
   */
  async close(timeout: number): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const locks = this.held.drain();
    if (locks.length === 0) return;
    this.log?.debug(messages.shutdownReleasing(locks.length));
    const releases = Promise.allSettled(locks.map((lock) => this.redlock.release(lock)));
    const settled = await withTimeout(releases, timeout, () => new Error('shutdown timeout')).then(
      () => true,
      () => false,
    );
    if (!settled) this.log?.warn(messages.shutdownTimedOut(timeout));
  }
}
