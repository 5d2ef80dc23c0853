import type { HeldLockRegistry } from './hold';

/** Counters for metrics and tests. */
export interface RedlockStats {
  /** Waiters woken by a release announcement. */
  wokenByRelease: number;
  /** Waiters woken by their timer (holder's ttl or backoff). */
  wokenByTimer: number;
  /** Locks declared lost while held (failed renewal, validity ran out, or revoked). */
  locksLost: number;
  /** Callers waiting in an acquisition of this instance right now (a gauge). */
  readonly waiting: number;
  /** Locks of this instance handed out and neither released nor expired (a gauge, counted when read). */
  readonly held: number;
  /** Renewals (automatic extensions) that failed: too few nodes answered, or the lock was gone. */
  readonly renewalsFailed: number;
  /** Locks this instance revoked (`revoke()`). */
  revocations: number;
  /**
   * `held` by the `@Locked` key template that took each lock (`'order:<0>'`; a key function counts under its
   * method, `'OrdersService.pay'`), locks of direct calls under `''`: a gauge with few series, counted when read.
   */
  readonly heldByTemplate: ReadonlyMap<string, number>;
  /** `waiting` by the same templates (callers of direct calls under `''`). */
  readonly waitingByTemplate: ReadonlyMap<string, number>;
  /**
   * Fair waiting (`fair: true`), by `@Locked` template: the longest queue, across the fleet, that a caller of
   * this instance waits in — the largest place the nodes reported to its waiters (`position` of the `waiting`
   * event; 1 goes next). A lower bound of that queue's length: callers behind the last of ours are not seen.
   * Templates without a placed fair waiter are absent; direct calls are not counted.
   */
  readonly queuedByTemplate: ReadonlyMap<string, number>;
}
/** @internal The counters and gauges of one instance; the gauges are counted when read. */
export class InstanceStats implements RedlockStats {
  wokenByRelease = 0;
  wokenByTimer = 0;
  locksLost = 0;
  revocations = 0;
  /** Acquisitions in progress right now (`waiting` reads it): a plain counter, cheap to update. */
  readonly inProgress = { count: 0 };
  /** Callers waiting in locked sections, by template (the sections keep it up to date). */
  readonly waitingInSections = new Map<string, number>();
  /** Fair callers waiting in locked sections, by their call's resources: template and last place (0: none yet). */
  readonly queuedInSections = new Map<readonly string[], { readonly template: string; place: number }>();
  /** Where failed renewals are counted (the instance's renewal watchdog, once built). */
  renewals: { readonly failed: number } = { failed: 0 };

  constructor(private readonly heldLocks: HeldLockRegistry) {}

  get waiting(): number {
    return this.inProgress.count;
  }

  get held(): number {
    return this.heldLocks.count();
  }

  get renewalsFailed(): number {
    return this.renewals.failed;
  }

  get heldByTemplate(): ReadonlyMap<string, number> {
    return this.heldLocks.byTemplate();
  }

  get waitingByTemplate(): ReadonlyMap<string, number> {
    // Every caller is in `inProgress`; those of locked sections are also counted by their template.
    const byTemplate = new Map(this.waitingInSections);
    let inSections = 0;
    for (const count of byTemplate.values()) inSections += count;
    const direct = this.inProgress.count - inSections;
    if (direct > 0) byTemplate.set('', direct + (byTemplate.get('') ?? 0));
    return byTemplate;
  }

  get queuedByTemplate(): ReadonlyMap<string, number> {
    const longest = new Map<string, number>();
    for (const { template, place } of this.queuedInSections.values()) {
      if (place > (longest.get(template) ?? 0)) longest.set(template, place);
    }
    return longest;
  }
}
