import type { AcquirePlan } from './acquire';
import type { Clock } from './clock';
import type { RedlockEvents } from './events';
import { quorumOf } from './fan-out';
import type { KeyPlan } from './grant';
import type { LockNode } from './lock-node';
import type { ResolvedOptions } from './options';

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
  /** Locks declared lost while held (failed renewal or validity ran out). */
  locksLost: number;
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
  });
}

/** The shortest writer intent, in ms: a few rounds of announcements and retries. */
const MIN_INTENT_TTL = 200;
