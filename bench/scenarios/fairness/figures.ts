import { percentile } from '../../stats';
import type { Attempt } from './protocol';

/** The measured window on the shared clock, and how many workers took part (all processes together). */
export interface Window {
  readonly startAt: number;
  readonly endAt: number;
  readonly workers: number;
  /** Workers per process: worker w runs in process ⌊w / workersPerProcess⌋. */
  readonly workersPerProcess: number;
}

const granted = (attempt: Attempt): boolean => attempt[3] >= 0;

/**
 * Jain's fairness index of `counts`: (Σx)² / (n · Σx²). 1 when every worker got as many grants; 1/n when one
 * worker got them all; NaN when nobody got any.
 */
export function jainIndex(counts: readonly number[]): number {
  const sum = counts.reduce((a, b) => a + b, 0);
  const squares = counts.reduce((a, b) => a + b * b, 0);
  return (sum * sum) / (counts.length * squares);
}

/**
 * Per waiter (every call of acquire, granted or given up), its bypass count: the grants that went, while it
 * waited, to calls that began waiting after it did — how often it was overtaken. Strict first-come,
 * first-served order gives 0 to every waiter.
 */
export function bypassCounts(attempts: readonly Attempt[]): number[] {
  // Grants by the time they were granted; each waiter looks only at those granted while it waited.
  const grants = attempts.filter(granted).sort((a, b) => a[2] - b[2]);
  const firstGrantedAfter = (time: number): number => {
    let lo = 0;
    let hi = grants.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (grants[mid][2] <= time) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  return attempts.map(([, start, end]) => {
    let bypasses = 0;
    for (let i = firstGrantedAfter(start); i < grants.length && grants[i][2] < end; i++)
      if (grants[i][1] > start) bypasses++;
    return bypasses;
  });
}

/**
 * Grants that began while an earlier holder (in any process) was still inside its hold: each is two holders at
 * once, a safety bug, or a measurement bug. A hold counts from its grant to the moment its worker called
 * release, which is before the lock is really free: no hand-over through the lock can look like an overlap.
 */
export function overlapCount(attempts: readonly Attempt[]): number {
  const grants = attempts.filter(granted).sort((a, b) => a[2] - b[2]);
  let heldUntil = -Infinity;
  let overlaps = 0;
  for (const [, , grantedAt, until] of grants) {
    if (grantedAt < heldUntil) overlaps++;
    heldUntil = Math.max(heldUntil, until);
  }
  return overlaps;
}

/**
 * The hand-overs: for each grant after another one, the time from the previous holder's end of hold (just
 * before its release) to this grant — the release's round trip, the announcement, the next waiter waking and
 * its attempt — and whether the lock stayed in the same process (a waiter there needs no announcement).
 */
export function handovers(
  attempts: readonly Attempt[],
  workersPerProcess: number,
): { gaps: number[]; sameProcess: number } {
  const grants = attempts.filter(granted).sort((a, b) => a[2] - b[2]);
  const gaps: number[] = [];
  let sameProcess = 0;
  for (let i = 1; i < grants.length; i++) {
    gaps.push(grants[i][2] - grants[i - 1][3]);
    if (Math.floor(grants[i][0] / workersPerProcess) === Math.floor(grants[i - 1][0] / workersPerProcess))
      sameProcess++;
  }
  return { gaps, sameProcess };
}

/**
 * The row of one implementation: grants in the window (per second), Jain's index of grants per worker, the
 * waits of granted calls (p50, p99, longest, longest ÷ median), calls that gave up, workers that never got the
 * lock, the bypass counts over waiters (p99, max), the hand-overs (p50, p99, share within one process) and the
 * overlaps.
 */
export function fairnessFigures(attempts: readonly Attempt[], window: Window): Record<string, number> {
  const { startAt, endAt, workers } = window;
  const perWorker = new Array<number>(workers).fill(0);
  const waits: number[] = [];
  let grants = 0;
  let gaveUp = 0;
  for (const attempt of attempts) {
    const [worker, start, end] = attempt;
    if (!granted(attempt)) {
      gaveUp++;
      continue;
    }
    // Every granted call has its wait, also one granted after the window (it began waiting inside it).
    waits.push(end - start);
    if (end >= startAt && end < endAt) {
      grants++;
      perWorker[worker]++;
    }
  }
  const bypasses = bypassCounts(attempts);
  const handed = handovers(attempts, window.workersPerProcess);
  const waitP50 = percentile(waits, 50);
  const waitMax = waits.length > 0 ? waits.reduce((a, b) => Math.max(a, b)) : NaN;
  return {
    grantsPerSec: (grants / (endAt - startAt)) * 1000,
    jain: jainIndex(perWorker),
    waitP50,
    waitP99: percentile(waits, 99),
    waitMax,
    waitMaxOverP50: waitMax / waitP50,
    gaveUp,
    starved: perWorker.filter((count) => count === 0).length,
    bypassP99: percentile(bypasses, 99),
    bypassMax: bypasses.length > 0 ? bypasses.reduce((a, b) => Math.max(a, b)) : NaN,
    handoverP50: percentile(handed.gaps, 50),
    handoverP99: percentile(handed.gaps, 99),
    sameProcessShare: handed.gaps.length > 0 ? handed.sameProcess / handed.gaps.length : NaN,
    overlaps: overlapCount(attempts),
  };
}
