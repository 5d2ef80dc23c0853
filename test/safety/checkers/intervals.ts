/** A critical section as one holder saw it, on one monotonic clock shared by all holders being checked. */
export interface Interval {
  readonly resource: string;
  readonly holder: string;
  readonly start: number;
  readonly end: number;
  /** The holder's fencing token, when the lock had one. */
  readonly token?: number;
  /** A read lock's section (shared with other readers); otherwise exclusive. */
  readonly mode?: 'read' | 'write';
  /** A semaphore's permit (each permit is exclusive on its own). */
  readonly permit?: number;
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
 * Returns the sections whose token was not larger than every earlier one. With read locks: a writer's token
 * must exceed every earlier token, a reader's every earlier writer's (concurrent readers are not ordered).
 */
export function findStaleTokens(intervals: readonly Interval[]): Interval[] {
  const stale: Interval[] = [];
  for (const list of byStart(intervals)) {
    let highest = -Infinity;
    let highestWriter = -Infinity;
    for (const interval of list) {
      if (interval.token === undefined) continue;
      const reader = interval.mode === 'read';
      if (interval.token <= (reader ? highestWriter : highest)) stale.push(interval);
      highest = Math.max(highest, interval.token);
      if (!reader) highestWriter = Math.max(highestWriter, interval.token);
    }
  }
  return stale;
}

/**
 * Read-write exclusion checker: per resource, every pair of overlapping sections of which at least one is not
 * a read (a writer overlaps nobody; readers may overlap readers). Without reads it finds what
 * {@link findOverlaps} finds, pair by pair.
 */
export function findExclusionViolations(intervals: readonly Interval[]): Overlap[] {
  const found: Overlap[] = [];
  for (const list of byStart(intervals)) {
    for (let i = 0; i < list.length; i++) {
      for (let j = i + 1; j < list.length && list[j].start < list[i].end; j++) {
        if (list[i].mode !== 'read' || list[j].mode !== 'read')
          found.push({ first: list[i], second: list[j] });
      }
    }
  }
  return found;
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
