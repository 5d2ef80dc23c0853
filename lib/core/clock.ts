import { MAX_DURATION } from './durations';

/** A cancellable timer returned by {@link Clock.setTimeout}. */
export interface Timer {
  cancel(): void;
}

/**
 * Where the algorithm reads time and schedules work. The real one is monotonic; the simulation supplies a
 * virtual one so the same code runs under controlled time.
 */
export interface Clock {
  /** Milliseconds on a monotonic clock (may be fractional). Never goes backwards. */
  now(): number;
  /**
   * Runs `fn` after at least `ms`, once I/O that was already pending has been processed. `keepsAlive` false:
   * the timer alone does not keep the process running (a closed instance's deadline watch).
   */
  setTimeout(fn: () => void, ms: number, keepsAlive?: boolean): Timer;
}

/**
 * The system clock: the global `performance.now()` and Node timers.
 *
 * A timer fires through `setImmediate` after the timeout: when the event loop was blocked, Node runs expired
 * timers before it reads sockets, so a plain timeout would blame nodes whose answers are already waiting
 * unread. The extra hop lets those answers count first.
 */
export const systemClock: Clock = {
  // The global one, read at each call (not node:perf_hooks' import): Jest's fake timers replace it, so a test
  // that fakes timers moves the core's time with the nodes' (in-memory nodes read Date.now()).
  now: () => globalThis.performance.now(),
  setTimeout(fn: () => void, ms: number, keepsAlive = true): Timer {
    let immediate: NodeJS.Immediate | undefined;
    const cancelTimeout = longTimeout(
      () => {
        immediate = setImmediate(fn);
      },
      ms,
      keepsAlive,
    );
    return {
      cancel() {
        cancelTimeout();
        if (immediate !== undefined) clearImmediate(immediate);
      },
    };
  },
};

/**
 * `setTimeout` for any delay: Node fires a delay above 2³¹ − 1 ms after 1 ms, so a longer one is armed in
 * steps; `Infinity` arms nothing (it never fires). Negative or NaN delays fire at once. `keepsAlive` false
 * unrefs each step. Returns the cancel.
 */
export function longTimeout(fn: () => void, ms: number, keepsAlive = true): () => void {
  if (ms === Infinity) return () => undefined;
  let left = ms > 0 ? ms : 0;
  let timeout: NodeJS.Timeout;
  const arm = () => {
    const step = Math.min(left, MAX_DURATION);
    left -= step;
    timeout = setTimeout(left > 0 ? arm : fn, step);
    if (!keepsAlive) timeout.unref();
  };
  arm();
  return () => clearTimeout(timeout);
}

/**
 * Settles like `promise`, or rejects with `onTimeout()` when it has not settled within `ms` (real time). The
 * timer never outlives the call. For I/O outside the algorithm (connecting, subscribing, closing).
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let cancel: (() => void) | undefined;
  const expired = new Promise<never>((_, reject) => {
    cancel = longTimeout(() => reject(onTimeout()), ms);
  });
  return Promise.race([promise, expired]).finally(() => cancel?.());
}
