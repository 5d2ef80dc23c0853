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
