import type { AcquirePlan } from './acquire';
import { Clock, systemClock } from './clock';
import { InvalidArgumentError, RedlockClosedError, type LockLostError } from './errors';
import { extendBatch } from './hold';
import type { RedlockEvents } from './events';
import { quorumOf } from './nodes';
import type { KeyPlan } from './primitives';
import { runLeadership } from './primitives';
import { LocalQueues } from './primitives';
import type { Lock, LockOwner } from './lock';
import type { LockNode } from './nodes';
import { LockingContext, lockResources } from './primitives';
import { describe, workUnprotected } from './messages';
import { ResolvedOptions, USING_OPTION_KEYS, resolveCallOptions } from './options';
import type { InspectionContext } from './operate';
import { Releases } from './release';
import { Revocations } from './operate';
import { Renewals } from './hold';
import { LockHost, runUnderLock } from './hold';
import type { SectionPort } from './instance-sections';

/** @internal Test and simulation hooks: a different clock and random source. Not for production use. */
export interface RedlockInternals {
  clock?: Clock;
  random?: () => number;
  /**
   * UNSAFE, for negative controls in tests only: hand out locks whose validity already ran out, to prove
   * that the safety checkers catch the overlaps this causes.
   */
  unsafeSkipValidityCheck?: boolean;
  /**
   * UNSAFE, for the negative control of docs/DESIGN.md §7 only: every attempt of an acquisition reuses the
   * first attempt's owner value, so a release that a node runs late can delete a later attempt's key.
   */
  unsafeReuseOwner?: boolean;
  /**
   * UNSAFE for liveness, for the negative control of docs/DESIGN.md §15 only: a waiting writer sets no intent,
   * so a stream of readers can starve it.
   */
  unsafeNoWriterIntent?: boolean;
}

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
}

/** @internal A new instance's counters, all zero; `held` and `waiting` are read when asked. */
function newStats(live: {
  held: () => number;
  heldByTemplate: () => ReadonlyMap<string, number>;
  inProgress: { readonly count: number };
  waitingInSections: ReadonlyMap<string, number>;
  renewals: () => { readonly failed: number };
}): RedlockStats {
  return {
    wokenByRelease: 0,
    wokenByTimer: 0,
    locksLost: 0,
    get waiting() {
      return live.inProgress.count;
    },
    get held() {
      return live.held();
    },
    get renewalsFailed() {
      return live.renewals().failed;
    },
    revocations: 0,
    get heldByTemplate() {
      return live.heldByTemplate();
    },
    get waitingByTemplate() {
      // Every caller is in `inProgress`; those of locked sections are also counted by their template.
      const byTemplate = new Map(live.waitingInSections);
      let inSections = 0;
      for (const count of byTemplate.values()) inSections += count;
      const direct = live.inProgress.count - inSections;
      if (direct > 0) byTemplate.set('', direct + (byTemplate.get('') ?? 0));
      return byTemplate;
    },
  };
}

/** Counts one more (or, with −1, one fewer) under `key`; a count back at 0 leaves the map. */
function bump(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const count = (counts.get(key) ?? 0) + by;
  if (count > 0) counts.set(key, count);
  else counts.delete(key);
}

/** @internal The acquisition plan of an instance: its nodes, quorum, clock, timeouts and retry policy (built once). */
export function acquirePlanOf(
  nodes: readonly LockNode[],
  options: ResolvedOptions,
  events: RedlockEvents,
  clock: Clock,
  internals: RedlockInternals,
): AcquirePlan {
  return Object.freeze({
    nodes,
    quorum: quorumOf(nodes.length),
    clock,
    nodeTimeout: options.nodeTimeout,
    driftFactor: options.driftFactor,
    events,
    retryDelay: options.retryDelay,
    maxRetryDelay: options.maxRetryDelay,
    random: internals.random ?? Math.random,
    unsafeSkipValidityCheck: internals.unsafeSkipValidityCheck === true,
    unsafeReuseOwner: internals.unsafeReuseOwner === true,
  });
}

/** @internal The keys of an instance: its prefix, its guard key (never a lock or fence key: '{' follows them), and
 * how long a waiting writer's intent lasts (docs/DESIGN.md §15). */
export function keyPlanOf(options: ResolvedOptions, internals: RedlockInternals): KeyPlan {
  return Object.freeze({
    keyPrefix: options.keyPrefix,
    guardKey: `${options.keyPrefix}!boot`,
    intentTtl: internals.unsafeNoWriterIntent ? 0 : Math.max(MIN_INTENT_TTL, 4 * options.maxRetryDelay),
    ownerLabel: options.owner,
  });
}

/** The shortest writer intent, in ms: a few rounds of announcements and retries. */
const MIN_INTENT_TTL = 200;

/** @internal What an instance's parts need of the instance itself: its owner-checked operations, its counters. */
export interface InstanceSelf extends LockOwner {
  keepAlive(lock: Lock): () => void;
  readonly nodes: readonly LockNode[];
  readonly options: ResolvedOptions;
}

/** @internal The parts one instance is made of, each a room of its own (docs/DESIGN.md §0), built once. */
export interface InstanceParts {
  readonly plan: AcquirePlan;
  readonly locking: LockingContext;
  readonly host: LockHost;
  readonly renewals: Renewals;
  readonly releases: Releases;
  readonly sections: SectionPort;
  readonly revocations: Revocations;
  readonly inspection: InspectionContext;
  readonly stats: RedlockStats;
}

/**
 * @internal Builds an instance's parts: renewals and work under a lock call back into the instance's own (owner-checked)
 * `extend`/`release`; a lock declared lost — by a failed renewal or by validity running out during the work —
 * is counted in `stats` and announced (`lost`) in one place.
 */
export function instanceParts(
  self: InstanceSelf,
  events: RedlockEvents,
  lifetime: AbortSignal,
  internals: RedlockInternals,
): InstanceParts {
  const { nodes, options } = self;
  // `held` is counted when read; an accessor of the literal keeps the counters' shape fast to update.
  const inProgress = { count: 0 };
  const waitingInSections = new Map<string, number>();
  const stats = newStats({
    held: () => revocations.heldCount(),
    heldByTemplate: () => revocations.heldByTemplate(),
    inProgress,
    waitingInSections,
    renewals: () => renewals,
  });
  const clock = internals.clock ?? systemClock;
  const plan = acquirePlanOf(nodes, options, events, clock, internals);
  const countLost = (lock: Lock, error: LockLostError) => {
    stats.locksLost++;
    if (events.has('lost')) events.emit('lost', { resources: lock.resources, error });
  };
  const releases = new Releases(plan);
  const inspection: InspectionContext = Object.freeze({ group: plan, keyPrefix: options.keyPrefix });
  const revocations = new Revocations({
    ...inspection,
    events,
    logger: options.logger,
    countLost,
    counted: () => stats.revocations++,
  });
  releases.onReleased((lock) => revocations.untrack(lock));
  const renewals = new Renewals(
    clock,
    (held, settle) => {
      if (!lifetime.aborted) return extendBatch(plan, held, settle);
      held.forEach((lock, i) => settle(i, new RedlockClosedError('extend', lock.resources)));
    },
    (lost, error) => {
      options.logger?.warn(workUnprotected(error.message));
      countLost(lost, error);
    },
  );
  const locking: LockingContext = Object.freeze({
    plan,
    keyPlan: keyPlanOf(options, internals),
    waiting: new LocalQueues(clock),
    lifetime,
    events,
    stats,
    inProgress,
    issuer: self,
    onGranted: (lock: Lock) => revocations.track(lock),
  });
  const host: LockHost = Object.freeze({
    keepAlive: (lock: Lock) => self.keepAlive(lock),
    extend: (lock: Lock, ttl?: number) => self.extend(lock, ttl),
    release: (lock: Lock) => self.release(lock),
    lostDuringWork: (lock: Lock, error: LockLostError) => {
      if (lock.markLost(error)) countLost(lock, error);
    },
    logger: options.logger,
  });
  const sections: SectionPort = Object.freeze<SectionPort>({
    settingsFor: (callOptions) => resolveCallOptions(callOptions, options, USING_OPTION_KEYS),
    lock: async (resources, settings, retrySplitsOnly, template) => {
      bump(waitingInSections, template, 1);
      try {
        const lock = (await lockResources(locking, resources, settings, true, retrySplitsOnly)) as Lock;
        lock.template = template;
        return lock;
      } finally {
        bump(waitingInSections, template, -1);
      }
    },
    runUnderLock: (lock, settings, work, keepFor) => runUnderLock(host, lock, settings, work, keepFor),
    onReleased: (listener) => releases.onReleased(listener),
    release: (lock) => self.release(lock),
    lead: (name, work, leadOptions, runTerm) => runLeadership(runTerm, events, name, work, leadOptions),
  });
  return Object.freeze({ plan, locking, host, renewals, releases, sections, revocations, inspection, stats });
}

/** @internal The nodes an instance was given, checked (a non-empty array) and frozen in their order. */
export function nodesOf(nodes: readonly LockNode[]): readonly LockNode[] {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new InvalidArgumentError(`nodes must be a non-empty array of LockNodes, got ${describe(nodes)}.`);
  }
  return Object.freeze([...nodes]);
}
