/**
 * Deterministic simulation of the algorithm (issue 5): the real core (`Redlock`, unchanged) over simulated
 * nodes, links and clocks in virtual time, one seeded PRNG per schedule. See test/safety/sim/README.md.
 *
 * SIM_SCHEDULES=<n> sets how many schedules the main run explores (default below); SIM_SEED=<n> fixes the
 * base seed (default: random, printed). A failing schedule prints its seed; replay it with
 *   npx ts-node --transpile-only test/safety/sim/cli.ts replay <seed> [profile]
 */
import { Progress, reportProgress } from '../../support';
import { CallRecord, bypasses, longestIdle } from '../checkers/fairness';
import { replayFencedWrites } from '../checkers/fenced-register';
import type { Interval } from '../checkers/intervals';
import type { Profile } from './config';
import { ARRIVAL_RESOLUTION, BYPASS_BOUND } from './fair-config';
import { SimPool } from './parallel';
import { RunSummary, formatSummary, runOne, runSchedules, seedOf } from './runner';
import type { WorldResult } from './world';

/**
 * The issue asks for at least 100,000 schedules in CI: about 55 s on two idle cores (1,800 schedules/s in a
 * CI run), several minutes on a machine loaded by other work. SIM_SCHEDULES lowers it for quick local runs.
 */
const DEFAULT_SCHEDULES = 100_000;
const SCHEDULES = positiveInt(process.env.SIM_SCHEDULES) ?? DEFAULT_SCHEDULES;
const BASE_SEED = positiveInt(process.env.SIM_SEED) ?? (Date.now() ^ (process.pid << 16)) >>> 0;
/** Schedules per negative control: each finds violations in well over 1 % of its schedules. */
const CONTROL_SCHEDULES = positiveInt(process.env.SIM_CONTROL_SCHEDULES) ?? 2_000;
/**
 * Schedules of the two runs around what this simulation found in the core: the unsafe hook's control (~1 %
 * of schedules violate with the hook on) and the short-extension regression (1.5–2 % violated before the fix).
 */
const KNOWN_BUG_SCHEDULES = Math.min(CONTROL_SCHEDULES, 1_000);
/**
 * Schedules of the controls that clear the restart guard early: their overlaps are rarer (0.2–0.4 % of
 * schedules), so 5,000 make a miss (e^-10) negligible.
 */
const GUARD_CONTROL_SCHEDULES = positiveInt(process.env.SIM_GUARD_CONTROL_SCHEDULES) ?? 5_000;
/**
 * Schedules of the clock-step control (`detectClockSteps: false`): overlaps in 0.25–0.4 % of its schedules,
 * so 4,000 make a miss (about e^-10) negligible.
 */
const STEP_CONTROL_SCHEDULES = positiveInt(process.env.SIM_STEP_CONTROL_SCHEDULES) ?? 4_000;
/**
 * Schedules of the short-extend control (holders keeping their old deadline): its overlaps fell to about 0.5 %
 * of schedules once the clock-step detection came on by default (it also stops counting nodes after steps
 * that client drift beyond 1 ms/s fakes), so 1,000 missed them now and then (e^-5); 3,000 make a miss (e^-14)
 * negligible.
 */
const OLD_DEADLINE_SCHEDULES = Math.min(GUARD_CONTROL_SCHEDULES, 3_000);
/** Schedules of the run with the restart guard in its portable mode (INFO denied: the data-age marker). */
const PORTABLE_SCHEDULES = positiveInt(process.env.SIM_PORTABLE_SCHEDULES) ?? 10_000;

/**
 * Schedules of the fair-waiting runs (docs/DESIGN.md §18): 3–5 processes looping on hot resources, 15–40 calls
 * a schedule, 10–35 ms of CPU each. The unfair control goes beyond K in every schedule. The progress checker's
 * stalls come in about 8 % of `fair-split`'s schedules on the shipped scripts (79 of 1,000), its control's in
 * about 8 % (24 of 300): 150 schedules each make a miss (e^-12) negligible.
 */
const FAIR_SCHEDULES = positiveInt(process.env.SIM_FAIR_SCHEDULES) ?? 100;
const SPLIT_SCHEDULES = Math.ceil(FAIR_SCHEDULES * 1.5);
const ENDLESS_TURN_SCHEDULES = Math.ceil(FAIR_SCHEDULES * 1.5);

const lines: string[] = [];
const totals = { schedules: 0, operations: 0, faults: 0, violations: 0, controlViolations: 0 };

function violations(summary: RunSummary): number {
  return summary.overlaps + summary.staleTokens + summary.anomalies;
}

function report(summary: RunSummary, control: boolean): void {
  lines.push(formatSummary(summary));
  totals.schedules += summary.schedules;
  totals.operations += summary.operations;
  totals.faults += summary.faults;
  if (control) totals.controlViolations += summary.overlaps + summary.staleTokens;
  else totals.violations += violations(summary);
}

/**
 * Overlaps the clock-step detection cannot prevent (docs/DESIGN.md §17, "Not covered": the later holder's
 * instance had no sample of the stepped node from before the step), reported apart — never silently dropped.
 */
function reportUncovered(summary: RunSummary): void {
  if (summary.uncoveredOverlaps === 0) return;
  lines.push(
    `  ${summary.uncoveredOverlaps} overlaps in ${summary.uncoveredSchedules} schedules not counted above: ` +
      `uncovered by the clock-step detection (a holder's instance had no sample of the stepped node read ` +
      `before the step: its first answer was the baseline). First: ${summary.uncoveredExamples
        .map((e) => `seed ${e.seed} (${e.profile})`)
        .join(', ')}`,
  );
}

/** The findings of failing schedules, with what it takes to replay each. */
function explain(summary: RunSummary): string {
  return summary.failures
    .map(
      (failure) =>
        `seed ${failure.seed} (replay: npx ts-node --transpile-only test/safety/sim/cli.ts replay ${failure.seed} ` +
        `${failure.profile}):\n  ${failure.findings.join('\n  ')}`,
    )
    .join('\n');
}

/** One pool of worker threads for the whole file (one per core; this thread, in Jest's sandbox, only waits). */
let pool: SimPool | undefined;

/** Set inside the describe block: a line on stderr every 15 s with the run in progress. */
let progress: Progress | undefined;

function run(profile: Profile, count: number): Promise<RunSummary> {
  const running = (pool ??= SimPool.start(undefined, false));
  const n = (value: number) => value.toLocaleString('en');
  progress?.phase(
    `${profile}, ${n(count)} schedules`,
    () => `${n(Math.min(running.claimed(), count))} started`,
  );
  return running.run({ profile, baseSeed: BASE_SEED, count });
}

async function control(profile: Profile, count = CONTROL_SCHEDULES): Promise<RunSummary> {
  const summary = await run(profile, count);
  report(summary, true);
  // A broken assumption may cause overlaps or stale tokens, never anything else (crashes, stuck clients).
  expect(summary.failures.flatMap((f) => f.anomalies)).toEqual([]);
  return summary;
}

describe(`simulation (SIM_SEED=${BASE_SEED}, SIM_SCHEDULES=${SCHEDULES})`, () => {
  progress = reportProgress('simulation');
  afterAll(async () => {
    await pool?.close();
    console.log(
      [
        ...lines,
        `TOTAL: ${totals.schedules} schedules, ${totals.operations} operations, ${totals.faults} faults; ` +
          `violations: ${totals.violations} (expected 0); ` +
          `negative-control violations: ${totals.controlViolations} (expected > 0)`,
      ].join('\n'),
    );
  });

  it('replays a seed exactly: the same seed yields the same event trace, alone or among others', async () => {
    for (const index of [0, 1, 2]) {
      const seed = seedOf(BASE_SEED, index);
      const first = await runOne(seed, 'safe');
      const second = await runOne(seed, 'safe');
      expect(first.trace.length).toBeGreaterThan(20);
      expect(second.trace).toEqual(first.trace);
      expect(second.result).toEqual(first.result);
    }
    // Interleaved with other schedules (16 at a time, more than the big runs' 4) each does exactly what it does alone.
    const batch: WorldResult[] = [];
    const onResult = (r: WorldResult) => batch.push(r);
    await runSchedules({ profile: 'safe', baseSeed: BASE_SEED, count: 40, concurrency: 16, onResult });
    expect(batch).toHaveLength(40);
    for (const result of batch) expect(result).toEqual((await runOne(result.seed, 'safe')).result);
  });

  it(`main run: ${SCHEDULES} random schedules, no overlapping holders, no stale fencing token`, async () => {
    const summary = await run('safe', SCHEDULES);
    report(summary, false);
    reportUncovered(summary);
    expect(explain(summary)).toBe('');
    // Overlaps the clock-step detection covers (every holder had sampled the stepped node before the step): none.
    expect(violations(summary)).toBe(0);
    expect(summary.staleWritesAccepted).toBe(0);
    // 15 % of the schedules stepped a running node's clock, and the instances saw steps (DESIGN §17).
    expect(summary.clockSteps).toBeGreaterThan(SCHEDULES / 10);
    expect(summary.stepsSeen).toBeGreaterThan(0);
    // Not vacuous: locks were granted, extended and lost, faults were injected, messages were lost.
    expect(summary.schedules).toBe(SCHEDULES);
    expect(summary.granted).toBeGreaterThan(SCHEDULES);
    expect(summary.extended).toBeGreaterThan(0);
    expect(summary.lost).toBeGreaterThan(0);
    expect(summary.faults).toBeGreaterThan(SCHEDULES / 2);
    expect(summary.lostMessages).toBeGreaterThan(0);
    // Requests ran after later ones on their connection (the reordering fault of DESIGN §7).
    expect(summary.reordered).toBeGreaterThan(0);
    // Read locks were granted among the writers (read-write locks, DESIGN §15).
    expect(summary.readsGranted).toBeGreaterThan(SCHEDULES / 20);
    // And permits of a 2-permit semaphore (DESIGN §14), each a lock of its own, never more than 2 at once.
    expect(summary.permitsGranted).toBeGreaterThan(SCHEDULES / 20);
    // The restart guard ran in its precise mode here (INFO readable) and refused after restarts.
    expect(summary.refusedUptime).toBeGreaterThan(0);
    expect(summary.refusedDataAge).toBe(0);
    // A quarter of the schedules waited fairly (DESIGN §18: the instances' default or some calls' option), and
    // their fair calls were granted — the oracles above held for them as for the rest.
    expect(summary.fairSchedules).toBeGreaterThan(SCHEDULES / 5);
    expect(summary.fairGranted).toBeGreaterThan(SCHEDULES / 50);
  }, 600_000);

  it(`portable guard mode: ${PORTABLE_SCHEDULES} schedules on nodes where INFO is denied, no violation`, async () => {
    const summary = await run('safe-portable', PORTABLE_SCHEDULES);
    report(summary, false);
    reportUncovered(summary);
    expect(explain(summary)).toBe('');
    expect(violations(summary)).toBe(0);
    expect(summary.clockSteps).toBeGreaterThan(0);
    // Not vacuous: empty restarts happened and the data-age guard refused (acquisitions came out unavailable).
    expect(summary.schedules).toBe(PORTABLE_SCHEDULES);
    expect(summary.granted).toBeGreaterThan(PORTABLE_SCHEDULES / 2);
    expect(summary.faults).toBeGreaterThan(PORTABLE_SCHEDULES / 2);
    expect(summary.refusedDataAge).toBeGreaterThan(0);
    expect(summary.refusedUptime).toBe(0);
  }, 600_000);

  describe('negative controls: with one assumption broken, the same oracles must find violations', () => {
    it('client clocks drifting 5× beyond the drift factor → overlapping holders', async () => {
      const summary = await control('drift-beyond');
      expect(summary.overlaps).toBeGreaterThan(0);
    }, 300_000);

    it('restart guard off, nodes restarting empty → overlapping holders', async () => {
      const summary = await control('no-guard');
      expect(summary.overlaps).toBeGreaterThan(0);
    }, 300_000);

    it("precise guard cleared early (INFO's uptime over-reported, no second taken off) → overlapping holders", async () => {
      const summary = await control('guard-early-uptime', GUARD_CONTROL_SCHEDULES);
      expect(summary.overlaps).toBeGreaterThan(0);
      expect(summary.refusedUptime).toBeGreaterThan(0);
    }, 300_000);

    it("portable guard cleared early (a lost marker's age counted from 90 % of a window earlier) → overlapping holders", async () => {
      const summary = await control('guard-early-data-age', GUARD_CONTROL_SCHEDULES);
      expect(summary.overlaps).toBeGreaterThan(0);
      expect(summary.refusedDataAge).toBeGreaterThan(0);
    }, 300_000);

    it("a node's wall clock stepping back on restart → stale fencing tokens", async () => {
      const summary = await control('clock-back');
      expect(summary.staleTokens).toBeGreaterThan(0);
    }, 300_000);

    it('validity check skipped (test-only hook), long delays → overlapping holders', async () => {
      const summary = await control('skip-validity', KNOWN_BUG_SCHEDULES);
      expect(summary.overlaps + summary.staleTokens).toBeGreaterThan(0);
    }, 300_000);
  });

  // docs/DESIGN.md §17: a running node's clock steps (forward: its keys end early). Each instance samples every
  // node's TIME in its answers and stops counting a node whose clock stepped, for a restart-guard window.
  describe('clock steps of running nodes (DESIGN §17)', () => {
    it('one node stepping in every schedule, detection on: no overlap among the holders it covers', async () => {
      const summary = await run('clock-steps', CONTROL_SCHEDULES);
      report(summary, false);
      reportUncovered(summary);
      expect(explain(summary)).toBe('');
      expect(violations(summary)).toBe(0);
      expect(summary.clockSteps).toBeGreaterThanOrEqual(CONTROL_SCHEDULES);
      expect(summary.stepsSeen).toBeGreaterThan(CONTROL_SCHEDULES / 2);
      expect(summary.granted).toBeGreaterThan(CONTROL_SCHEDULES / 2);
    }, 300_000);

    it('control: the same steps with `detectClockSteps: false` → overlapping holders', async () => {
      const summary = await control('clock-steps-undetected', STEP_CONTROL_SCHEDULES);
      expect(summary.stepsSeen).toBe(0);
      expect(summary.overlaps).toBeGreaterThan(0);
    }, 300_000);

    it('control: 3 of 5 nodes stepping forward together → overlaps with the detection on; fencing rejects every stale write', async () => {
      const summary = await run('majority-step', CONTROL_SCHEDULES);
      report(summary, true);
      reportUncovered(summary);
      totals.controlViolations += summary.uncoveredOverlaps;
      expect(summary.failures.flatMap((f) => f.anomalies)).toEqual([]);
      // Fresh instances (no sample of the nodes before the step) get a majority of early-expired copies.
      expect(summary.overlaps + summary.uncoveredOverlaps).toBeGreaterThan(0);
      // The holders' writes: overlapping holders took turns on a register that ignores tokens; the fenced
      // register rejected the superseded holders' writes and let none interleave.
      expect(summary.staleWrites).toBeGreaterThan(0);
      expect(summary.writesRejected).toBeGreaterThan(0);
      expect(summary.staleWritesAccepted).toBe(0);
    }, 300_000);

    it('the fenced-writes checker: overlapping holders take turns on a register that ignores tokens, on a fenced one only when two share a token (its control)', () => {
      const section = (holder: string, start: number, end: number, token: number): Interval => ({
        resource: 'a',
        holder,
        start,
        end,
        token,
      });
      // c0 still writes at 30 after c1 (granted at 20) wrote: A, B, A, B without fencing.
      const rising = [section('c0#0', 0, 30, 5), section('c1#0', 20, 40, 7)];
      expect(replayFencedWrites(rising, false)).toEqual({ writes: 4, rejected: 0, interleaved: 2 });
      expect(replayFencedWrites(rising, true)).toEqual({ writes: 4, rejected: 1, interleaved: 0 });
      // The later holder's token is lower: its writes are rejected, the resource saw c0 alone.
      const falling = [section('c0#0', 0, 30, 7), section('c1#0', 20, 40, 5)];
      expect(replayFencedWrites(falling, true)).toEqual({ writes: 4, rejected: 2, interleaved: 0 });
      // Two holders with one token: the fenced register lets them take turns.
      const shared = [section('c0#0', 0, 30, 7), section('c1#0', 20, 40, 7)];
      expect(replayFencedWrites(shared, true)).toEqual({ writes: 4, rejected: 0, interleaved: 2 });
    });
  });

  // docs/DESIGN.md §18: fair waiting. Bounded bypass while the nodes agree on the order of arrivals; progress
  // (a free lock handed over within a bound) while they disagree. Each checker with its control.
  describe('fair waiting (DESIGN §18)', () => {
    it(`nodes that agree on the order: no call overtaken by more than ${BYPASS_BOUND} calls that arrived more than ${ARRIVAL_RESOLUTION} ms after it`, async () => {
      const summary = await run('fair-order', FAIR_SCHEDULES);
      report(summary, false);
      expect(explain(summary)).toBe('');
      expect(violations(summary)).toBe(0);
      expect(summary.maxBypass).toBeLessThanOrEqual(BYPASS_BOUND);
      expect(summary.fairViolations).toBe(0);
      // The scenario: every call fair and granted, the nodes never split an attempt over turns (they agreed).
      expect(summary.fairOps).toBe(summary.operations);
      expect(summary.granted).toBe(summary.operations);
      expect(summary.calls).toBeGreaterThan(FAIR_SCHEDULES * 10);
      expect(summary.turnSplits).toBe(0);
    }, 300_000);

    it('control: the same schedules with `fair: false` → calls overtaken by many later ones', async () => {
      const summary = await control('fair-order-unfair', FAIR_SCHEDULES);
      expect(summary.fairOps).toBe(0);
      expect(summary.bypassSchedules).toBeGreaterThan(FAIR_SCHEDULES / 2);
      expect(summary.maxBypass).toBeGreaterThan(3 * BYPASS_BOUND);
    }, 300_000);

    let split: RunSummary | undefined;
    it('nodes that disagree on the order ([a, b] against [b, a] among them): each call granted or ended by its wait, no violation', async () => {
      split = await run('fair-split', SPLIT_SCHEDULES);
      report(split, false);
      expect(violations(split)).toBe(0);
      // A call without the lock gave up when its wait ran out, neither before nor well after (see FairVerdict).
      expect(split.badEnds).toBe(0);
      expect(split.granted).toBeGreaterThan(split.operations * 0.9);
      // The scenario: the nodes disagreed on the head (attempts granted by one node, refused for a turn by another).
      expect(split.turnSplits).toBeGreaterThan(SPLIT_SCHEDULES);
    }, 300_000);

    // Failed on the scripts before the ticket rejoined ahead of the turn check (test/safety/sim/README.md,
    // finding 5; docs/DESIGN.md §18): a lock free for up to 3.6 s in 8 % of these schedules.
    it('... and the lock is handed over within the bound: 2 ticket ttls and a retry', () => {
      expect(split).toBeDefined();
      expect(split!.idleSchedules).toBe(0);
      expect(split!.longestIdle).toBeGreaterThan(0);
    });

    it('control: strict order per node, turns that never end (no fallback to the race) → the lock stays free while calls wait', async () => {
      const summary = await control('fair-split-endless-turn', ENDLESS_TURN_SCHEDULES);
      expect(summary.idleSchedules).toBeGreaterThan(0);
      expect(summary.badEnds).toBe(0);
    }, 300_000);

    it('the checkers count what they say (planted calls)', () => {
      const call = (holder: string, arrival: number, granted?: number, ended = granted ?? 0): CallRecord => ({
        holder,
        resources: ['a'],
        arrival,
        granted,
        ended,
        wait: 1_000,
        fair: true,
      });
      const planted = [call('a', 0, 40), call('b', 1, 10), call('c', 2.5, 20), call('d', 3, 30)];
      expect(bypasses(planted).max).toBe(3);
      // Arrivals within the resolution count as simultaneous: b (1 ms after a) no longer counts.
      expect(bypasses(planted, 2).max).toBe(2);
      expect(bypasses(planted.map((c, i) => ({ ...c, granted: i, ended: i })))).toMatchObject({ max: 0 });
      // A call that gave up at 25 counts the later calls granted before then.
      expect(bypasses([call('a', 0, undefined, 25), call('b', 1, 10), call('c', 2, 30)]).max).toBe(1);
      // Nobody held anything from 10 to 30 while w waited (arrived at 5, granted at 30).
      const held = [
        { start: 0, end: 10 },
        { start: 30, end: 40 },
      ];
      expect(longestIdle([call('w', 5, 30)], held)).toMatchObject({ length: 20, from: 10, waiting: ['w'] });
      expect(longestIdle([call('w', 5, 8)], held).length).toBe(0);
    });
  });

  // docs/DESIGN.md §7: a release that a node runs after the next attempt's acquire (a Cluster's redirect, a
  // re-send) must not delete what that attempt won. Each attempt has its own owner value; the control reuses one.
  it('requests reordered on their connections among contending clients: no overlapping holders', async () => {
    const summary = await run('reorder', CONTROL_SCHEDULES);
    report(summary, false);
    expect(explain(summary)).toBe('');
    expect(violations(summary)).toBe(0);
    expect(summary.reordered).toBeGreaterThan(CONTROL_SCHEDULES);
    expect(summary.granted).toBeGreaterThan(CONTROL_SCHEDULES / 4);
  }, 300_000);

  it('control: the same with one owner value reused across attempts → overlapping holders', async () => {
    const summary = await control('reorder-reused-owner');
    expect(summary.reordered).toBeGreaterThan(CONTROL_SCHEDULES);
    expect(summary.overlaps).toBeGreaterThan(0);
  }, 300_000);

  describe('read-write locks (DESIGN §15): with the readers rule broken on the nodes, the checker finds overlaps', () => {
    it('a reader granted while a writer holds the lock → overlapping holders', async () => {
      const summary = await control('read-ignores-writer');
      expect(summary.readsGranted).toBeGreaterThan(CONTROL_SCHEDULES / 4);
      expect(summary.overlaps).toBeGreaterThan(0);
    }, 300_000);

    it("a reader's expiry counted on a client clock ahead of the node's → overlapping holders", async () => {
      const summary = await control('reader-client-clock');
      expect(summary.readsGranted).toBeGreaterThan(0);
      expect(summary.overlaps).toBeGreaterThan(0);
    }, 300_000);
  });

  it("semaphores counted per node and accepted on a majority (redis-semaphore's design), no fault → over-admission", async () => {
    const summary = await control('semaphore-per-node-count');
    expect(summary.faults).toBe(0);
    expect(summary.permitsGranted).toBeGreaterThan(CONTROL_SCHEDULES / 4);
    expect(summary.overlaps).toBeGreaterThan(0);
  }, 300_000);

  // Found by this simulation (seed 1639): `extend(lock, ttl)` with a ttl shorter than the validity left,
  // when too few answers arrived in time, used to keep the old deadline although nodes that answered late had
  // applied the shorter ttl — a second client could then acquire while the first still worked. Fixed in
  // lib/core/extension.ts (the deadline is lowered to `start + ttl − drift` whatever the outcome).
  it('extend() to a shorter ttl that misses its quorum never leaves the holder a stale deadline', async () => {
    const summary = await run('short-extend', KNOWN_BUG_SCHEDULES);
    lines.push(
      `${formatSummary(summary)}; ${summary.shortExtendFailed} short extensions missed their quorum`,
    );
    expect(explain(summary)).toBe('');
    // The scenario happened: short extensions missed their quorum (and their holders kept working).
    expect(summary.shortExtendFailed).toBeGreaterThan(KNOWN_BUG_SCHEDULES / 10);
  }, 300_000);

  it('control: holders that keep the deadline they had before a failed short extension → overlapping holders', async () => {
    const summary = await control('short-extend-old-deadline', OLD_DEADLINE_SCHEDULES);
    expect(summary.shortExtendFailed).toBeGreaterThan(OLD_DEADLINE_SCHEDULES / 10);
    expect(summary.overlaps).toBeGreaterThan(0);
  }, 300_000);
});

function positiveInt(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 0) throw new Error(`expected a whole number, got "${value}"`);
  return number;
}
