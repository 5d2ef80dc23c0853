import { Lock } from '../../lib';
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

/**
 * A lock held on `clock` (resource `r<suffix>`, key `k<suffix>`, value `v<suffix>`) with `validity` ms left of
 * `ttl`, whose owner extends by handing the lock back and releases nothing: for the core's timers, not Redis.
 */
export function heldLockOn(clock: Clock, ttl: number, validity: number, suffix: string | number = ''): Lock {
  const grant = {
    resources: [`r${suffix}`],
    keys: [`k${suffix}`],
    fenceKeys: [],
    value: `v${suffix}`,
    ttl,
    deadline: clock.now() + validity,
    attempts: 1,
    fencingToken: undefined,
  };
  const owner = { extend: async (l: Lock) => l, release: async () => ({ releasedOn: 0, votes: [] }) };
  return new (Lock as unknown as new (...args: unknown[]) => Lock)(grant, { abandoned: false }, owner, clock);
}
