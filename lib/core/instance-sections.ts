import type { RedlockEvents } from './events';
import { type LockHost, runUnderLock } from './hold';
import type { Lock, ReleaseResult } from './lock';
import {
  type CallSettings,
  type ResolvedOptions,
  USING_OPTION_KEYS,
  type UsingOptions,
  resolveCallOptions,
} from './options';
import {
  type LeadOptions,
  type LockingContext,
  type TermRunner,
  lockResources,
  runLeadership,
} from './primitives';
import { type InspectionContext, type LockInspection, inspectResource } from './operate';
import type { Releases } from './release';
import type { InstanceStats } from './stats';

/** @internal What a locked section asks the core to lock. */
export interface SectionLockRequest {
  /** Already normalised (the section compared them with its call chain). */
  readonly resources: string[];
  readonly settings: CallSettings;
  /** A lock held by another owner is not waited for (a scheduled tick being run elsewhere); splits are retried. */
  readonly retrySplitsOnly: boolean;
  /** Where the caller waits and the lock is held in the gauges (`stats.waitingByTemplate`, `heldByTemplate`). */
  readonly template: string;
}

/**
 * @internal The one entry point of the Nest layer's locked sections into a core instance (`RedlockCore.sections`):
 * they validate a call's options once, lock resources they already normalised, run the work under the lock
 * with the core's renewal and loss policy, and learn of every release (shutdown bookkeeping).
 */
export interface SectionPort {
  /** The effective settings of one call: `using()`'s options validated and completed with the instance's. */
  settingsFor(options: UsingOptions | undefined): CallSettings;
  /** Acquires the request's resources, throwing when busy; the lock is counted under its template. */
  lock(request: SectionLockRequest): Promise<Lock>;
  /** Runs `work` while `lock` is held, as `using()` does; with `keepFor`, keeps the lock that many ms after. */
  runUnderLock<T>(
    lock: Lock,
    settings: Pick<CallSettings, 'autoExtend' | 'onLockLost'>,
    work: () => Promise<T>,
    keepFor?: () => number,
  ): Promise<T>;
  /** Tells `listener` of each lock of the instance once its release resolved; returns the off switch. */
  onReleased(listener: (lock: Lock) => void): () => void;
  /** Releases a lock of the instance (`Redlock.release`). */
  release(lock: Lock): Promise<ReleaseResult>;
  /**
   * `Redlock.lead()` with each term run by `runTerm`: the Nest layer runs a term as a locked section, so that
   * shutdown drains it like any other.
   */
  lead<T>(
    name: string,
    work: (lease: Lock) => Promise<T>,
    options: LeadOptions | undefined,
    runTerm: TermRunner,
  ): Promise<T>;
  /** Reads `resource`'s keys on every node (`Redlock.inspect`): whether a holder has it on a quorum. */
  inspect(resource: string): Promise<LockInspection>;
}

/** @internal The {@link SectionPort} of one instance. */
export class InstanceSections implements SectionPort {
  private placesHeard = false;

  constructor(
    private readonly options: ResolvedOptions,
    private readonly locking: LockingContext,
    private readonly host: LockHost,
    private readonly releases: Releases,
    private readonly events: RedlockEvents,
    private readonly stats: InstanceStats,
    private readonly inspection: InspectionContext,
  ) {}

  settingsFor(options: UsingOptions | undefined): CallSettings {
    return resolveCallOptions(options, this.options, USING_OPTION_KEYS);
  }

  async lock({ resources, settings, retrySplitsOnly, template }: SectionLockRequest): Promise<Lock> {
    const waiting = this.stats.waitingInSections;
    waiting.set(template, (waiting.get(template) ?? 0) + 1);
    const queued = this.stats.queuedInSections;
    if (settings.fair) {
      this.listenForPlaces();
      queued.set(resources, { template, place: 0 });
    }
    try {
      const lock = await lockResources(this.locking, resources, settings, true, retrySplitsOnly);
      lock.template = template;
      return lock;
    } finally {
      queued.delete(resources);
      const left = (waiting.get(template) ?? 1) - 1;
      if (left > 0) waiting.set(template, left);
      else waiting.delete(template);
    }
  }

  /**
   * The places of fair section callers (`stats.queuedByTemplate`), from the `waiting` events: each names the
   * call's own resources array, which keys the caller's entry. Listened to from the first fair section on.
   */
  private listenForPlaces(): void {
    if (this.placesHeard) return;
    this.placesHeard = true;
    this.events.on('waiting', ({ resources, position }) => {
      const entry = this.stats.queuedInSections.get(resources);
      if (entry) entry.place = position;
    });
  }

  runUnderLock<T>(
    lock: Lock,
    settings: Pick<CallSettings, 'autoExtend' | 'onLockLost'>,
    work: () => Promise<T>,
    keepFor?: () => number,
  ): Promise<T> {
    return runUnderLock(this.host, lock, settings, work, keepFor);
  }

  onReleased(listener: (lock: Lock) => void): () => void {
    return this.releases.onReleased(listener);
  }

  release(lock: Lock): Promise<ReleaseResult> {
    return this.host.release(lock);
  }

  lead<T>(
    name: string,
    work: (lease: Lock) => Promise<T>,
    options: LeadOptions | undefined,
    runTerm: TermRunner,
  ): Promise<T> {
    return runLeadership(runTerm, this.events, name, work, options);
  }

  inspect(resource: string): Promise<LockInspection> {
    return inspectResource(this.inspection, resource);
  }
}
