import type { Clock, Timer } from '../../lib';

/**
 * A virtual clock for pure units of the core: timers run when `advance` passes their time, and every
 * microtask a timer set off (a renewal's outcome takes several hops) settles before the next one runs.
 * `time` may be moved by hand inside a call (time spent there).
 */
export class VirtualClock implements Clock {
  time = 0;
  private timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): Timer {
    const timer = { at: this.time + ms, fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }
  async advance(ms: number): Promise<void> {
    const until = this.time + ms;
    for (;;) {
      await settleMicrotasks();
      const next = this.timers.filter((t) => !t.cancelled && t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      next.cancelled = true;
      this.time = Math.max(this.time, next.at);
      next.fn();
    }
    await settleMicrotasks();
    this.time = Math.max(this.time, until);
  }
}

const settleMicrotasks = () => new Promise((resolve) => setImmediate(resolve));
