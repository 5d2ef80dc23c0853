import type { Clock, Timer } from '../../../lib/core';

/** One scheduled event. Cancelling clears `fn`; the entry stays in the heap and is skipped when popped. */
interface Entry {
  readonly time: number;
  readonly seq: number;
  fn: (() => void) | undefined;
}

/**
 * Discrete-event scheduler in virtual ("true") time: a binary min-heap of events ordered by (time, insertion
 * sequence), so events at the same instant run in the order they were scheduled. `step()` runs exactly one
 * event synchronously; the driver (`runner.ts`) lets the promise microtasks that event started drain before it
 * calls `step()` again, exactly as Node drains microtasks between two macrotasks.
 */
export class Scheduler {
  /** The current true time, in ms. */
  now = 0;
  /** Events run so far. */
  events = 0;
  private readonly heap: Entry[] = [];
  private seq = 0;

  at(time: number, fn: () => void): Entry {
    const entry: Entry = { time: time > this.now ? time : this.now, seq: this.seq++, fn };
    const heap = this.heap;
    let i = heap.length;
    heap.push(entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(entry, heap[parent])) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = entry;
    return entry;
  }

  after(delay: number, fn: () => void): Entry {
    return this.at(this.now + delay, fn);
  }

  cancel(entry: Entry): void {
    entry.fn = undefined;
  }

  /** Runs the next live event; returns false when none is left. */
  step(): boolean {
    for (;;) {
      const entry = this.pop();
      if (!entry) return false;
      const fn = entry.fn;
      if (!fn) continue;
      entry.fn = undefined;
      this.now = entry.time;
      this.events++;
      fn();
      return true;
    }
  }

  private pop(): Entry | undefined {
    const heap = this.heap;
    if (heap.length === 0) return undefined;
    const top = heap[0];
    const last = heap.pop() as Entry;
    const size = heap.length;
    if (size > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= size) break;
        const right = left + 1;
        const child = right < size && before(heap[right], heap[left]) ? right : left;
        if (!before(heap[child], last)) break;
        heap[i] = heap[child];
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}

function before(x: Entry, y: Entry): boolean {
  return x.time < y.time || (x.time === y.time && x.seq < y.seq);
}

/**
 * A client process's monotonic clock: `offset + rate × true time`. A rate of `1 − ε` is a clock that runs
 * slow by ε (the dangerous direction for Redlock: the client believes less time has passed than has). Timers
 * fire when this clock has advanced by `ms`, plus an optional lateness (a busy event loop is never early,
 * often late).
 */
export class DriftingClock implements Clock {
  /** Timer calls with a delay that is not a finite number (a core bug: Node would treat it as 1 ms). */
  badDelays = 0;

  constructor(
    readonly scheduler: Scheduler,
    readonly rate: number,
    private readonly offset: number,
    private readonly lateness: () => number = () => 0,
  ) {}

  now(): number {
    return this.offset + this.rate * this.scheduler.now;
  }

  /** The true time at which this clock reads `reading`. */
  toTrue(reading: number): number {
    return (reading - this.offset) / this.rate;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    if (!Number.isFinite(ms)) {
      this.badDelays++;
      ms = 1;
    }
    return this.schedule(fn, ms, this.lateness());
  }

  /** A timer that fires exactly when this clock has advanced by `ms` (the simulated client's own deadline). */
  setExactTimeout(fn: () => void, ms: number): Timer {
    return this.schedule(fn, ms, 0);
  }

  private schedule(fn: () => void, ms: number, late: number): Timer {
    const entry = this.scheduler.after(Math.max(0, ms) / this.rate + late, fn);
    return { cancel: () => this.scheduler.cancel(entry) };
  }
}
