import type { AcquirePlan } from './acquire';
import { Clock, systemClock } from './clock';
import { InvalidArgumentError, type LockLostError, RedlockClosedError } from './errors';
import type { RedlockEvents } from './events';
import { HeldLockRegistry, type LockHost, Renewals, extendBatch } from './hold';
import type { Lock, LockOwner, ReleaseResult } from './lock';
import { describe, workUnprotected } from './messages';
import { type LockNode, NodeClocks, NodeFailures, quorumOf } from './nodes';
import { type InspectionContext, Revocations } from './operate';
import type { ResolvedOptions } from './options';
import { type KeyPlan, LocalQueues, type LockingContext } from './primitives';
import { Releases } from './release';
import { InstanceSections } from './instance-sections';
import { InstanceStats } from './stats';

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
    failures: new NodeFailures(events, clock),
    clocks: options.detectClockSteps ? new NodeClocks(clock, events, options.logger) : undefined,
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
/** @internal What an instance's parts need of the instance itself: its owner-checked operations. */
export interface InstanceSelf extends LockOwner {
  keepAlive(lock: Lock): () => void;
  extend(lock: Lock, ttl?: number): Promise<Lock>;
  release(lock: Lock): Promise<ReleaseResult>;
  readonly nodes: readonly LockNode[];
  readonly options: ResolvedOptions;
}

/** A lock declared lost while held (a failed renewal, validity run out, a revocation): counted and announced once. */
class LossReport {
  constructor(
    private readonly stats: InstanceStats,
    private readonly events: RedlockEvents,
  ) {}

  report(lock: Lock, error: LockLostError): void {
    this.stats.locksLost++;
    if (this.events.has('lost')) this.events.emit('lost', { resources: lock.resources, error });
  }
}

/** What work under a lock needs of its instance: the instance's own owner-checked operations. */
class InstanceHost implements LockHost {
  constructor(
    private readonly self: InstanceSelf,
    private readonly losses: LossReport,
    readonly logger: ResolvedOptions['logger'],
  ) {}

  keepAlive(lock: Lock): () => void {
    return this.self.keepAlive(lock);
  }

  extend(lock: Lock, ttl?: number): Promise<Lock> {
    return this.self.extend(lock, ttl);
  }

  release(lock: Lock): Promise<ReleaseResult> {
    return this.self.release(lock);
  }

  lostDuringWork(lock: Lock, error: LockLostError): void {
    if (lock.markLost(error)) this.losses.report(lock, error);
  }
}

/**
 * @internal The parts one instance is made of, each from a room of its own (docs/DESIGN.md §0), built once: its
 * plan and keys, its held locks and counters, renewals, releases, revocations, and the locked sections' port.
 */
export class InstanceParts {
  readonly plan: AcquirePlan;
  readonly stats: InstanceStats;
  readonly held = new HeldLockRegistry();
  readonly releases: Releases;
  readonly inspection: InspectionContext;
  readonly revocations: Revocations;
  readonly renewals: Renewals;
  readonly locking: LockingContext;
  readonly host: InstanceHost;
  readonly sections: InstanceSections;

  constructor(self: InstanceSelf, events: RedlockEvents, lifetime: AbortSignal, internals: RedlockInternals) {
    const { options } = self;
    const clock = internals.clock ?? systemClock;
    this.plan = acquirePlanOf(self.nodes, options, events, clock, internals);
    this.stats = new InstanceStats(this.held);
    const losses = new LossReport(this.stats, events);
    this.releases = new Releases(this.plan);
    this.releases.onReleased((lock) => this.held.untrack(lock));
    this.inspection = Object.freeze({ group: this.plan, keyPrefix: options.keyPrefix });
    this.revocations = new Revocations({
      ...this.inspection,
      events,
      logger: options.logger,
      held: this.held,
      countLost: (lock, error) => losses.report(lock, error),
      counted: () => this.stats.revocations++,
    });
    this.renewals = renewalsOf(this.plan, lifetime, options, losses);
    this.stats.renewals = this.renewals;
    this.locking = Object.freeze({
      plan: this.plan,
      keyPlan: keyPlanOf(options, internals),
      waiting: new LocalQueues(clock),
      lifetime,
      events,
      stats: this.stats,
      issuer: self,
      granted: this.revocations,
      underWay: new Set<Promise<unknown>>(),
    });
    this.host = new InstanceHost(self, losses, options.logger);
    this.sections = new InstanceSections(
      options,
      this.locking,
      this.host,
      this.releases,
      events,
      this.stats,
      this.inspection,
    );
  }
}

/** The renewal watchdog of an instance: batches of extensions while it is open, losses reported and logged. */
function renewalsOf(plan: AcquirePlan, lifetime: AbortSignal, options: ResolvedOptions, losses: LossReport) {
  return new Renewals(
    plan.clock,
    (held, settle) => {
      if (!lifetime.aborted) return extendBatch(plan, held, settle);
      held.forEach((lock, i) => settle(i, new RedlockClosedError('extend', lock.resources)));
    },
    (lost, error) => {
      options.logger?.warn(workUnprotected(error.message));
      losses.report(lost, error);
    },
  );
}

/** @internal The nodes an instance was given, checked (a non-empty array) and frozen in their order. */
export function nodesOf(nodes: readonly LockNode[]): readonly LockNode[] {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new InvalidArgumentError(`nodes must be a non-empty array of LockNodes, got ${describe(nodes)}.`);
  }
  return Object.freeze([...nodes]);
}
