import {
  AcquirePlan,
  AcquisitionResult,
  acquireWithRetries,
  holderDelay,
  throwIfAborted,
  ReleaseWaiter,
  backoffDelay,
} from '../acquire';
import { PermitCountMismatchError } from '../errors';
import { askNodes, type AcquireRequest, callNode } from '../nodes';
import { nextOwnerValue } from '../lock';
import { conflictingPermits, describe } from '../messages';

/**
 * The key of permit `slot` of a semaphore: `<lock key>#<slot>`. Same hash tag as the resource's lock and
 * fence keys (one Redis Cluster slot); never a lock key, since lock keys end in `}`.
 */
export function permitKey(lockKey: string, slot: number): string {
  return `${lockKey}#${slot}`;
}

/** The key where each node records a semaphore's number of permits: `<lock key>#permits`. */
export function limitKey(lockKey: string): string {
  return `${lockKey}#permits`;
}

/** A permit acquisition's result: the mutex's, with the slot it holds and the key of that slot. */
export type PermitResult = AcquisitionResult & {
  readonly permit?: number;
  readonly keys?: readonly string[];
};

/**
 * A counting semaphore over the quorum (docs/DESIGN.md §14): `permits` slots, each an exclusive lock of its
 * own (`acquireWithRetries`, one attempt per slot per round, each with its own owner value), so at most
 * `permits` holders exist at once for the same reason the mutex has at most one. Slots are tried starting
 * at a random one and going round, which spreads contenders; when every slot is taken the acquisition waits
 * for a release announcement on any slot, or the shortest holder ttl, or a backoff, within `wait`.
 */
export async function acquirePermit(
  plan: AcquirePlan,
  resources: readonly string[],
  request: AcquireRequest,
  permits: number,
  wait: number,
  signal: AbortSignal | undefined,
): Promise<PermitResult> {
  const { clock } = plan;
  const began = clock.now();
  const base = request.keys[0];
  const slots = Array.from({ length: permits }, (_, slot) => permitKey(base, slot));
  await checkLimit(plan, base, permits, request.ttl, resources);
  const first = Math.floor(plan.random() * permits);
  let waiter: ReleaseWaiter | undefined;
  let attempts = 0;
  try {
    for (let round = 1; ; round++) {
      let failure: Extract<AcquisitionResult, { kind: 'failed' }> | undefined;
      let busy: Extract<AcquisitionResult, { kind: 'failed' }> | undefined;
      let holderTtl: number | undefined;
      for (let k = 0; k < permits; k++) {
        const slot = (first + k) % permits;
        const keys = [slots[slot]];
        const owner = attempts === 0 ? request.owner : nextOwnerValue(request.owner);
        const result = await acquireWithRetries(plan, resources, { ...request, keys, owner }, 0, signal);
        attempts += result.attempts;
        if (result.kind === 'acquired')
          return { ...result, attempts, permit: slot, keys, ...wakesOf(waiter) };
        failure = result;
        if (result.attempt.kind === 'busy') {
          busy = result;
          const ttl = result.attempt.holderTtl;
          if (ttl !== undefined && ttl >= 0)
            holderTtl = holderTtl === undefined ? ttl : Math.min(holderTtl, ttl);
        }
      }
      // Every permit is held (busy wins over unavailable: a quorum answered for those slots).
      const last = busy ?? failure!;
      const elapsed = clock.now() - began;
      const budget = wait - elapsed;
      if (budget <= 0) return { ...last, attempts, elapsed, ...wakesOf(waiter) };
      waiter ??= new ReleaseWaiter(plan.nodes, clock, slots);
      waiter.failedAttempt(Math.max(5, plan.retryDelay), plan.maxRetryDelay, holderTtl);
      const subscribed = busy !== undefined && (await waiter.subscribe());
      const jitter = plan.random() * Math.min(plan.retryDelay, 5);
      let delay: number;
      if (subscribed && waiter.justSubscribed) delay = 0;
      else if (subscribed && waiter.announced) delay = Math.max(waiter.quietFor, jitter);
      else if (subscribed) delay = holderDelay(holderTtl, plan);
      else delay = backoffDelay(round, plan.retryDelay, plan.maxRetryDelay, plan.random);
      waiter.announced = false;
      await waiter.sleep(Math.min(budget, delay), signal, subscribed);
      throwIfAborted(signal, resources);
    }
  } finally {
    waiter?.close();
  }
}

/** How the sleeps between rounds ended (the slot attempts themselves never sleep). */
function wakesOf(waiter: ReleaseWaiter | undefined): { wokenByRelease: number; wokenByTimer: number } {
  return { wokenByRelease: waiter?.wokenByRelease ?? 0, wokenByTimer: waiter?.wokenByTimer ?? 0 };
}

/**
 * Records the number of permits on every node that supports it, and refuses the call when a node had another
 * one recorded: callers that disagree would otherwise each admit their own number of holders. The record
 * lives at least as long as the last acquisition's ttl (refreshed by every acquisition).
 */
async function checkLimit(
  plan: AcquirePlan,
  base: string,
  permits: number,
  ttl: number,
  resources: readonly string[],
): Promise<void> {
  const key = limitKey(base);
  const result = await askNodes(
    plan,
    'acquire',
    (node) =>
      node.limit ? callNode(node, 'limit', () => node.limit!(key, permits, ttl)) : Promise.resolve(permits),
    { needed: plan.nodes.length, isYes: () => true, waitForAll: true },
    (node, value) => {
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < -1) {
        throw new Error(`${node.name}: LockNode.limit() resolved ${describe(value)}`);
      }
      return value;
    },
  );
  result.answers.forEach((answer, index) => {
    if (answer.status === 'value' && answer.value !== permits) {
      throw new PermitCountMismatchError(
        conflictingPermits(resources, permits, answer.value, plan.nodes[index].name, key),
        resources,
        permits,
        answer.value,
      );
    }
  });
}
