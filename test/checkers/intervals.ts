/** A critical section as one holder saw it, on one monotonic clock shared by all holders being checked. */
export interface Interval {
  readonly resource: string;
  readonly holder: string;
  readonly start: number;
  readonly end: number;
  /** The holder's fencing token, when the lock had one. */
  readonly token?: number;
}

/** Two critical sections on the same resource that overlapped in time. */
export interface Overlap {
  readonly first: Interval;
  readonly second: Interval;
}

/**
 * Mutual exclusion checker: per resource, sorts sections by start and reports every section that began
 * before the latest end seen so far (so an overlap with any earlier section is caught, not just the previous).
 */
export function findOverlaps(intervals: readonly Interval[]): Overlap[] {
  const overlaps: Overlap[] = [];
  for (const list of byStart(intervals)) {
    let latest: Interval | undefined;
    for (const interval of list) {
      if (latest && interval.start < latest.end) overlaps.push({ first: latest, second: interval });
      if (!latest || interval.end > latest.end) latest = interval;
    }
  }
  return overlaps;
}

/**
 * Fencing checker: per resource, in order of start time, tokens of successive holders must strictly increase.
 * Returns the sections whose token was not larger than every earlier one.
 */
export function findStaleTokens(intervals: readonly Interval[]): Interval[] {
  const stale: Interval[] = [];
  for (const list of byStart(intervals)) {
    let highest = -Infinity;
    for (const interval of list) {
      if (interval.token === undefined) continue;
      if (interval.token <= highest) stale.push(interval);
      highest = Math.max(highest, interval.token);
    }
  }
  return stale;
}

/** A moment at which more sections of one resource ran at once than its limit allows. */
export interface OverAdmission {
  readonly resource: string;
  readonly at: number;
  readonly holders: readonly string[];
}

/**
 * Semaphore checker: per resource, sweeps the section boundaries in time order (an end before a start at the
 * same instant) and reports every start that makes more than `limit` sections run at once.
 */
export function findOverAdmissions(intervals: readonly Interval[], limit: number): OverAdmission[] {
  const found: OverAdmission[] = [];
  for (const list of byStart(intervals)) {
    const events = list.flatMap((interval) => [
      { at: interval.start, delta: 1, interval },
      { at: interval.end, delta: -1, interval },
    ]);
    events.sort((a, b) => a.at - b.at || a.delta - b.delta);
    const running = new Set<Interval>();
    for (const event of events) {
      if (event.delta < 0) running.delete(event.interval);
      else {
        running.add(event.interval);
        if (running.size > limit) {
          found.push({
            resource: event.interval.resource,
            at: event.at,
            holders: [...running].map((i) => i.holder),
          });
        }
      }
    }
  }
  return found;
}

/** The sections of each resource, sorted by start time. */
function byStart(intervals: readonly Interval[]): Interval[][] {
  const byResource = new Map<string, Interval[]>();
  for (const interval of intervals) {
    const list = byResource.get(interval.resource) ?? [];
    list.push(interval);
    byResource.set(interval.resource, list);
  }
  return [...byResource.values()].map((list) => list.sort((a, b) => a.start - b.start));
}
