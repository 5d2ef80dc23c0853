import { execFileSync } from 'node:child_process';
import {
  bypassCounts,
  fairnessFigures,
  handovers,
  jainIndex,
  overlapCount,
} from '../../bench/scenarios/fairness/figures';
import { Attempt, sharedClock } from '../../bench/scenarios/fairness/protocol';

/**
 * The figures of the bench's fairness scenario (10), on made-up traces of [worker, start, end, heldUntil]
 * (heldUntil -1: the call gave up). Each check is shown finding what it looks for, and finding nothing where
 * there is nothing. No Redis, no timing.
 */
describe('bench fairness figures', () => {
  /** Three workers served strictly in the order they began waiting, each holding 5 ms. */
  const fifo: Attempt[] = [
    [0, 0, 0, 5],
    [1, 1, 6, 11],
    [2, 2, 12, 17],
    [0, 5, 18, 23],
    [1, 11, 24, 29],
  ];

  it("Jain's index: 1 for equal shares, 1/n when one worker gets everything, in between otherwise", () => {
    expect(jainIndex([5, 5, 5, 5])).toBe(1);
    expect(jainIndex([20, 0, 0, 0])).toBe(0.25);
    expect(jainIndex([3, 1])).toBeCloseTo(16 / 20, 12);
  });

  it('bypasses: none in first-come, first-served order', () => {
    expect(bypassCounts(fifo)).toEqual([0, 0, 0, 0, 0]);
  });

  it('bypasses: a waiter overtaken by later waiters counts each grant that went to them (negative control)', () => {
    const overtaken: Attempt[] = [
      [0, 0, 0, 5],
      // Worker 1 waits from 1 to 30; workers 2 and 0 (again) begin later and are served first.
      [1, 1, 30, 35],
      [2, 2, 6, 11],
      [0, 5, 12, 17],
      // Began before worker 1 (no bypass of it) and after worker 0's first call: overtaken twice itself.
      [3, 0.5, 18, 23],
    ];
    expect(bypassCounts(overtaken)).toEqual([0, 2, 0, 0, 2]);
  });

  it('bypasses: a call that gave up counts the later waiters served while it waited', () => {
    const gaveUp: Attempt[] = [
      [0, 0, 0, 5],
      [1, 1, 20, -1],
      [2, 3, 6, 11],
    ];
    expect(bypassCounts(gaveUp)).toEqual([0, 1, 0]);
  });

  it('overlaps: none when each grant comes after the previous hold ended, even right at its end', () => {
    expect(overlapCount(fifo)).toBe(0);
    expect(
      overlapCount([
        [0, 0, 0, 5],
        [1, 0, 5, 9],
      ]),
    ).toBe(0);
  });

  it('overlaps: a grant inside another hold counts, wherever it sits in the list (negative control)', () => {
    expect(
      overlapCount([
        [1, 0, 12, 20],
        [0, 0, 0, 15],
        [2, 0, 16, 18],
      ]),
    ).toBe(2);
    // A call that gave up holds nothing.
    expect(
      overlapCount([
        [0, 0, 0, 10],
        [1, 0, 5, -1],
      ]),
    ).toBe(0);
  });

  it('the row: grants in the window only, waits of every granted call, calls given up, workers never granted', () => {
    const attempts: Attempt[] = [
      [0, 0, 10, 15],
      [1, 0, 20, 25],
      [0, 15, 30, 35],
      // Began in the window, granted after it: its wait counts, its grant does not.
      [1, 25, 110, 115],
      [2, 0, 60, -1],
    ];
    const row = fairnessFigures(attempts, { startAt: 0, endAt: 100, workers: 4, workersPerProcess: 2 });
    expect(row.grantsPerSec).toBeCloseTo(30, 10);
    expect(row.jain).toBeCloseTo(9 / (4 * 5), 12);
    expect(row.waitP50).toBe(15);
    expect(row.waitMax).toBe(85);
    expect(row.waitMaxOverP50).toBeCloseTo(85 / 15, 12);
    expect(row.gaveUp).toBe(1);
    expect(row.starved).toBe(2);
    expect(row.overlaps).toBe(0);
    // Worker 2 waited 0–60 while worker 0 (who began at 15) was served at 30.
    expect(row.bypassMax).toBe(1);
    // Hand-overs 15→20, 25→30, 35→110: gaps 5, 5, 75; workers 0 and 1 share process 0.
    expect(row.handoverP50).toBe(5);
    expect(row.sameProcessShare).toBe(1);
  });

  it("hand-overs: the gap from one hold's end to the next grant, and whether the lock stayed in its process", () => {
    // Workers 0, 1 in process 0; 2, 3 in process 1.
    const attempts: Attempt[] = [
      [0, 0, 0, 5],
      [1, 0, 7, 12], // same process, 2 ms
      [2, 0, 20, 25], // other process, 8 ms
      [3, 0, 26, 31], // same process (1), 1 ms
      [0, 6, 50, -1], // gave up: no hand-over
    ];
    expect(handovers(attempts, 2)).toEqual({ gaps: [2, 8, 1], sameProcess: 2 });
    // Negative control: one worker per process, every hand-over crosses processes.
    expect(handovers(attempts, 1)).toEqual({ gaps: [2, 8, 1], sameProcess: 0 });
  });

  it("the shared clock is one clock across processes: a child's reading lies between the parent's", () => {
    const childReading = (expression: string): number => {
      const source = `process.stdout.write(String(${expression}))`;
      return Number(execFileSync(process.execPath, ['-e', source], { encoding: 'utf8' }));
    };
    const before = sharedClock();
    // The function itself, run in the child.
    const shared = childReading(`(${sharedClock.toString()})()`);
    const after = sharedClock();
    expect(shared).toBeGreaterThanOrEqual(before);
    expect(shared).toBeLessThanOrEqual(after);
    // Negative control: a clock of the child's own (performance.now() counts from its start) fails the check.
    const own = childReading('performance.now()');
    expect(own >= before && own <= sharedClock()).toBe(false);
  });
});
