/**
 * Checkers of fair waiting (docs/DESIGN.md §18) over the calls of one run, all times on one clock (the
 * simulation's true time).
 *
 * A call **arrives** when the caller calls `acquire()` (or `using()`): the moment the core takes as the call's
 * arrival (`lockResources`' start, handed to `acquireWithRetries` as `arrivedAt`). A caller that the per-process
 * local queue holds behind another caller of the same process has arrived all the same: its ticket, once it
 * reaches the nodes, carries that arrival (`node now − waited`, the time it spent queued in its process
 * included), so it is ordered among the other processes' callers by when it called, not by when it reached Redis.
 */

/** One acquisition as the caller saw it. */
export interface CallRecord {
  readonly holder: string;
  readonly resources: readonly string[];
  /** When the caller called (true time). */
  readonly arrival: number;
  /** When the lock was handed to it; undefined when the call ended without it. */
  granted?: number;
  /** When the call returned or threw (the grant, for a granted call). */
  ended: number;
  /** Its wait budget (ms on the caller's clock). */
  readonly wait: number;
  /** Whether the call ran with `fair: true`. */
  readonly fair: boolean;
}

/** How far calls were overtaken. */
export interface Bypasses {
  /** The largest bypass count of any call. */
  readonly max: number;
  /** Calls overtaken at all (bypass count > 0). */
  readonly overtaken: number;
  /** The call with the largest count and the calls that overtook it (for findings). */
  readonly worst?: { readonly call: CallRecord; readonly by: readonly CallRecord[] };
}

/**
 * Bypass count of a call: how many calls that arrived after it (strictly) were granted while it still waited
 * (before its own grant, or before it gave up) — the definition of test/core/fair-bypass.spec.ts and of
 * docs/BENCHMARKS.md. First come, first served gives 0 to every call. With `resolution`, only calls that
 * arrived more than that many ms after it count: closer ones count as simultaneous.
 */
export function bypasses(calls: readonly CallRecord[], resolution = 0): Bypasses {
  const granted = calls.filter((call) => call.granted !== undefined).sort((x, y) => x.granted! - y.granted!);
  let max = 0;
  let overtaken = 0;
  let worst: Bypasses['worst'];
  for (const call of calls) {
    const until = call.granted ?? call.ended;
    const by: CallRecord[] = [];
    for (const other of granted) {
      if (other.granted! >= until) break;
      if (other.arrival > call.arrival + resolution) by.push(other);
    }
    if (by.length > 0) overtaken++;
    if (by.length > max) {
      max = by.length;
      worst = { call, by };
    }
  }
  return { max, overtaken, worst };
}

/** A critical section's span (any resource). */
export interface Held {
  readonly start: number;
  readonly end: number;
}

/** The longest stretch during which nobody held any lock while some call waited. */
export interface IdleStretch {
  readonly length: number;
  readonly from: number;
  /** The calls waiting when it began. */
  readonly waiting: readonly string[];
}

/**
 * Progress (no livelock): the longest stretch of time during which no critical section was running (nobody
 * held anything) while at least one call was waiting (arrived, neither granted nor given up). A free lock and
 * a waiter whose resources are all free must meet within a bound.
 */
export function longestIdle(calls: readonly CallRecord[], sections: readonly Held[]): IdleStretch {
  const points: { at: number; held: number; waiting: number }[] = [];
  for (const s of sections) {
    if (s.end <= s.start) continue;
    points.push({ at: s.start, held: 1, waiting: 0 }, { at: s.end, held: -1, waiting: 0 });
  }
  for (const call of calls) {
    const until = call.granted ?? call.ended;
    if (until <= call.arrival) continue;
    points.push({ at: call.arrival, held: 0, waiting: 1 }, { at: until, held: 0, waiting: -1 });
  }
  points.sort((x, y) => x.at - y.at);
  let held = 0;
  let waiting = 0;
  let best: IdleStretch = { length: 0, from: 0, waiting: [] };
  let idleFrom: number | undefined;
  for (let i = 0; i < points.length;) {
    const at = points[i].at;
    for (; i < points.length && points[i].at === at; i++) {
      held += points[i].held;
      waiting += points[i].waiting;
    }
    const idle = held === 0 && waiting > 0;
    if (idle && idleFrom === undefined) idleFrom = at;
    else if (!idle && idleFrom !== undefined) {
      if (at - idleFrom > best.length) best = { length: at - idleFrom, from: idleFrom, waiting: [] };
      idleFrom = undefined;
    }
  }
  if (best.length > 0) {
    const from = best.from;
    const waiters = calls.filter((c) => c.arrival <= from && (c.granted ?? c.ended) > from);
    best = { ...best, waiting: waiters.map((c) => c.holder) };
  }
  return best;
}
