import { performance } from 'node:perf_hooks';

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
  /** Runs `fn` after at least `ms`, once I/O that was already pending has been processed. */
  setTimeout(fn: () => void, ms: number): Timer;
}

/**
 * The system clock: `performance.now()` and Node timers.
 *
 * A timer fires through `setImmediate` after the timeout: when the event loop was blocked, Node runs expired
 * timers before it reads sockets, so a plain timeout would blame nodes whose answers are already waiting
 * unread. The extra hop lets those answers count first.
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn: () => void, ms: number): Timer {
    let immediate: NodeJS.Immediate | undefined;
    const timeout = setTimeout(() => {
      immediate = setImmediate(fn);
    }, ms);
    return {
      cancel() {
        clearTimeout(timeout);
        if (immediate !== undefined) clearImmediate(immediate);
      },
    };
  },
};

/** Resolves after `ms` on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    clock.setTimeout(resolve, ms);
  });
}
