import type { Timer } from './clock';
import { AcquireAbortedError } from './errors';
import { Attempt, AttemptContext, attemptAcquire } from './attempt';
import type { OwnerState } from './lock';
import type { AcquireRequest } from './node';
import { backoffDelay, nextDelay } from './retry';

/** What the retry loop needs beyond a single attempt. */
export interface AcquisitionContext extends AttemptContext {
  readonly retryDelay: number;
  readonly maxRetryDelay: number;
  readonly random: () => number;
  /** Removes every key of this owner from every node (owner-checked). */
  releaseEverywhere(keys: readonly string[], owner: string): Promise<unknown>;
  /** Counts how waiters woke up. */
  readonly stats: { wokenByRelease: number; wokenByTimer: number };
}

/** How one acquisition ended. */
export type AcquisitionResult =
  | {
      readonly kind: 'acquired';
      readonly attempt: Extract<Attempt, { kind: 'acquired' }>;
      readonly attempts: number;
    }
  | {
      readonly kind: 'failed';
      readonly attempt: Exclude<Attempt, { kind: 'acquired' }>;
      readonly attempts: number;
      readonly elapsed: number;
    };

/**
 * Attempts until one succeeds or the wait budget is spent. Between attempts on a busy lock it waits for the
 * holder's release announcement (subscribed before the next attempt, so a release cannot slip between the
 * busy answer and the subscription) or for the holder's remaining ttl, whichever comes first; without
 * announcements it falls back to jittered exponential backoff. On failure or abort every key this owner may
 * have written is removed on every node, including nodes that timed out.
 */
export async function acquireWithRetries(
  context: AcquisitionContext,
  resources: readonly string[],
  request: AcquireRequest,
  wait: number,
  state: OwnerState,
  signal: AbortSignal | undefined,
): Promise<AcquisitionResult> {
  const { clock } = context;
  const began = clock.now();
  // Created on the first failed attempt: an uncontended acquisition never needs one.
  let waiter: ReleaseWaiter | undefined;
  let splits = 0;
  try {
    for (let attempts = 1; ; attempts++) {
      throwIfAborted(signal, resources, request, state, context);
      if (waiter) waiter.announced = false;
      const attempt = await attemptAcquire(context, request, state);
      if (attempt.kind === 'acquired') return { kind: 'acquired', attempt, attempts };
      throwIfAborted(signal, resources, request, state, context);
      waiter ??= new ReleaseWaiter(context, request.keys);

      const elapsed = clock.now() - began;
      const budget = wait - elapsed;
      // A split vote: we won some nodes, other contenders won others, nobody a quorum. Everyone releases and
      // retries; a randomised, growing backoff (deaf to the others' release announcements) breaks the tie.
      const split = attempt.kind === 'busy' && attempt.votes.some((vote) => vote.outcome === 'acquired');
      let delay: number | undefined;
      if (budget <= 0) delay = undefined;
      else if (split) {
        splits++;
        await waiter.subscribe();
        delay = Math.min(
          budget,
          context.random() * Math.max(1, context.retryDelay) * 2 ** Math.min(splits, 5),
        );
      } else if (attempt.kind === 'busy' && (await waiter.subscribe()) && !waiter.announced) {
        // Subscribed: sleep until the holder's key expires unless its release is announced first. Right after
        // subscribing, try once more at once: the holder may have released before the subscription was active.
        delay = waiter.justSubscribed ? 0 : Math.min(budget, holderDelay(attempt.holderTtl, context));
      } else if (waiter.announced) {
        delay = Math.min(budget, context.random() * Math.min(context.retryDelay, 5));
      } else {
        const backoff = backoffDelay(attempts, context.retryDelay, context.maxRetryDelay, context.random);
        delay = nextDelay(backoff, budget, attempt.kind === 'expired' ? undefined : attempt.holderTtl);
      }
      if (delay === undefined) {
        state.done = true;
        await context.releaseEverywhere(request.keys, request.owner);
        return { kind: 'failed', attempt, attempts, elapsed };
      }
      // Not awaited: on each node it is sent before the next attempt's acquire, on the same connection.
      void context.releaseEverywhere(request.keys, request.owner);
      if (delay > 0) await waiter.sleep(delay, signal, !split);
    }
  } finally {
    waiter?.close();
  }
}

/** How long to wait for a holder whose keys expire in `holderTtl` ms; unknown ttl: the longest backoff. */
function holderDelay(holderTtl: number | undefined, context: AcquisitionContext): number {
  const jitter = context.random() * Math.min(context.retryDelay, 5);
  return (holderTtl === undefined || holderTtl < 0 ? context.maxRetryDelay : holderTtl + 1) + jitter;
}

function throwIfAborted(
  signal: AbortSignal | undefined,
  resources: readonly string[],
  request: AcquireRequest,
  state: OwnerState,
  context: AcquisitionContext,
): void {
  if (!signal?.aborted) return;
  state.done = true;
  void context.releaseEverywhere(request.keys, request.owner);
  throw new AcquireAbortedError(resources, signal.reason);
}

/** The release announcements one acquisition listens to, and the sleep they cut short. */
class ReleaseWaiter {
  /** Set when a release of one of our keys was announced since the flag was last cleared. */
  announced = false;
  /** True on the first check after the subscription became active. */
  justSubscribed = false;
  private state: 'none' | 'active' | 'unavailable' = 'none';
  private unsubscribers: (() => void)[] = [];
  private wake: ((event: 'released' | 'lost') => void) | undefined;

  constructor(
    private readonly context: AcquisitionContext,
    private readonly keys: readonly string[],
  ) {}

  /** Subscribes once (on every node that supports it); resolves whether announcements will arrive. */
  async subscribe(): Promise<boolean> {
    if (this.state !== 'none') {
      this.justSubscribed = false;
      return this.state === 'active';
    }
    const listener = (event: 'released' | 'lost') => {
      // A lost subscriber connection may swallow the announcement we wait for: poll from now on.
      if (event === 'lost') this.state = 'unavailable';
      else this.announced = true;
      this.wake?.(event);
    };
    const results = await Promise.allSettled(
      this.context.nodes.map((node) => (node.watch ? node.watch(this.keys, listener) : Promise.reject())),
    );
    for (const result of results) if (result.status === 'fulfilled') this.unsubscribers.push(result.value);
    this.state = this.unsubscribers.length > 0 ? 'active' : 'unavailable';
    this.justSubscribed = this.state === 'active';
    return this.state === 'active';
  }

  /**
   * Sleeps `ms`, or less when the signal aborts — and, with `wakeOnRelease`, when a release is announced or
   * announcements are lost.
   */
  sleep(ms: number, signal: AbortSignal | undefined, wakeOnRelease: boolean): Promise<void> {
    return new Promise((resolve) => {
      let timer: Timer | undefined;
      let settled = false;
      const done = (cause: 'released' | 'timer' | 'other') => {
        if (settled) return;
        settled = true;
        this.wake = undefined;
        timer?.cancel();
        signal?.removeEventListener('abort', onAbort);
        if (cause === 'released') this.context.stats.wokenByRelease++;
        else if (cause === 'timer') this.context.stats.wokenByTimer++;
        resolve();
      };
      const onAbort = () => done('other');
      this.wake = wakeOnRelease ? (event) => done(event === 'released' ? 'released' : 'other') : undefined;
      timer = this.context.clock.setTimeout(() => done('timer'), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  close(): void {
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    this.unsubscribers = [];
  }
}
