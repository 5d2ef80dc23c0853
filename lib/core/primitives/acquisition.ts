import { acquireWithRetries, failureOf, type AcquirePlan, eitherSignal } from '../acquire';
import { InvalidArgumentError, LockBusyError, LockQueueFullError, RedlockClosedError } from '../errors';
import type { AcquireRequest } from '../nodes';
import type { RedlockEvents } from '../events';
import { KeyPlan, keySetId, requestFor } from './request';
import { announceOutcome, grantOf } from './outcome';
import { Lock, LockOwner } from '../lock';
import type { LocalQueues } from './local-queue';
import * as messages from '../messages';
import type { CallSettings } from '../options';
import { PermitResult, acquirePermit } from './permits';
import { limitKey } from './semaphore-read';

/** @internal What acquisitions of one instance work with: values built once by the instance. */
export interface LockingContext {
  readonly plan: AcquirePlan;
  readonly keyPlan: KeyPlan;
  readonly waiting: LocalQueues;
  /** Aborted by quit(): waiting acquisitions stop. */
  readonly lifetime: AbortSignal;
  readonly events: RedlockEvents;
  /** Counters the instance reports (`Redlock.stats`); `inProgress` counts the acquisitions under way. */
  readonly stats: { wokenByRelease: number; wokenByTimer: number; readonly inProgress: { count: number } };
  /** The instance the locks belong to (their extend and release go there). */
  readonly issuer: LockOwner;
  /** Told of every lock handed out (it will hear of its revocation, docs/DESIGN.md §16). */
  readonly granted: { track(lock: Lock): void };
  /** The acquisitions under way: quit() waits for them to clean up after themselves before it closes the nodes. */
  readonly underWay: Set<Promise<unknown>>;
}

/**
 * @internal Acquires already normalised resources with resolved settings — a lock, a permit of a semaphore (§14) or a
 * read lock (§15): the lock, or — when busy and `throwOnBusy` is false — null; with `retrySplitsOnly`, a lock
 * held by another owner is not waited for. What `acquire`, `tryAcquire`, `using` and the Nest layer run; refused
 * once the instance quit.
 */
export function lockResources(
  context: LockingContext,
  resources: string[],
  settings: CallSettings,
  throwOnBusy: true,
  retrySplitsOnly: boolean,
): Promise<Lock>;
/** @internal */
export function lockResources(
  context: LockingContext,
  resources: string[],
  settings: CallSettings,
  throwOnBusy: boolean,
  retrySplitsOnly: boolean,
): Promise<Lock | null>;
/** @internal */
export async function lockResources(
  context: LockingContext,
  resources: string[],
  settings: CallSettings,
  throwOnBusy: boolean,
  retrySplitsOnly: boolean,
): Promise<Lock | null> {
  if (context.lifetime.aborted) throw new RedlockClosedError('acquire', resources);
  const { plan, events } = context;
  const { permits } = settings;
  if (permits !== undefined && resources.length !== 1) {
    throw new InvalidArgumentError(messages.permitsOfSeveral(resources, permits));
  }
  const request = requestFor(context.keyPlan, resources, settings, settings.wait > 0 && !retrySplitsOnly);
  if (request.keys.length > 1) refuseKeys(plan, request.keys);
  const began = plan.clock.now();
  const result = await queuedAttempts(context, resources, request, settings, retrySplitsOnly, began);
  const elapsed = plan.clock.now() - began;
  if (result.kind === 'acquired') {
    announceOutcome(events, result, resources, settings, elapsed, undefined);
    const lock = new Lock(
      grantOf(result, request, resources, settings),
      result.claim,
      context.issuer,
      plan.clock,
    );
    context.granted.track(lock);
    return lock;
  }
  const failure = failureOf(plan, resources, result.attempt, result.attempts, result.elapsed, request);
  if (failure instanceof LockBusyError) {
    announceOutcome(events, result, resources, settings, elapsed, undefined);
    if (!throwOnBusy) return null;
    throw failure;
  }
  announceOutcome(events, result, resources, settings, elapsed, failure.retryAfter);
  throw failure;
}

/**
 * The attempts of one acquisition, a mutex's or a permit's, counted as in progress. One contender per key set
 * in this process; the others queue locally (see LocalQueues). A single attempt (tryAcquire, wait 0) never
 * queues. Time spent queued counts against the wait budget; the caller's signal or quit() stops it.
 */
async function queuedAttempts(
  context: LockingContext,
  resources: string[],
  request: AcquireRequest,
  settings: CallSettings,
  retrySplitsOnly: boolean,
  arrivedAt: number,
): Promise<PermitResult> {
  const { plan, stats } = context;
  const { permits } = settings;
  const stop = eitherSignal(settings.signal, context.lifetime);
  const attempt = (wait: number): Promise<PermitResult> =>
    permits === undefined
      ? acquireWithRetries(plan, resources, request, wait, stop.signal, retrySplitsOnly, arrivedAt)
      : acquirePermit(plan, resources, request, permits, wait, stop.signal);
  const queueId = permits === undefined ? keySetId(request.keys) : limitKey(request.keys[0]);
  // Load shedding: refused before any traffic when this instance's waiters for the key set reach the cap.
  if (settings.wait > 0 && context.waiting.waiting(queueId) >= settings.maxWaiting) {
    stop.dispose();
    throw new LockQueueFullError(resources, settings.maxWaiting);
  }
  let result: PermitResult;
  stats.inProgress.count++;
  const underWay =
    settings.wait > 0
      ? context.waiting.run(queueId, settings.wait, stop.signal, (queuedFor) =>
          attempt(Math.max(0, settings.wait - queuedFor)),
        )
      : attempt(0);
  context.underWay.add(underWay);
  try {
    result = await underWay;
  } finally {
    context.underWay.delete(underWay);
    stats.inProgress.count--;
    stop.dispose();
  }
  stats.wokenByRelease += result.wokenByRelease;
  stats.wokenByTimer += result.wokenByTimer;
  return result;
}

/** A node that cannot hold these keys together (a Redis Cluster, keys in several slots) refuses up front. */
function refuseKeys(plan: AcquirePlan, keys: readonly string[]): void {
  for (const node of plan.nodes) {
    const problem = node.refuseKeys?.(keys);
    if (problem) throw new InvalidArgumentError(problem);
  }
}
