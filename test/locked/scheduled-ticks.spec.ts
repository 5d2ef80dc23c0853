import { ChildProcess, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RedisNodes, reportProgress, startRedisNodes } from '../support';
import { TreeBuild, transpileTree } from '../support/transpile-tree';

/**
 * `@Cron` / `@Interval` + `@Locked` across three application instances, each in its own OS process, their
 * timers skewed as on separate hosts: one on time, one 10 % of the period late, one 25 % late. Checked from
 * the runs every instance logged: each tick ran exactly once across the instances (instant bodies), never
 * concurrently (bodies longer than the period), and the negative control — releasing when the body returns
 * (`oncePerTick: false`) — runs ticks more than once.
 */
/** On time, 10 % and 25 % of the period late. */
const SKEWS = [0, 100, 250];
/** The same plus one 700 ms late: close to the bound README states (period − min(period / 4, 1 s) = 750 ms). */
const SKEWS_TO_BOUND = [...SKEWS, 700];
const PERIOD = 1_000;
/** README's bound on a late timer for `oncePerTick`: period − min(period / 4, 1 s). */
const BOUND = PERIOD - Math.min(PERIOD / 4, 1_000);
const WATCH_MS = 12_000;
/** A timer may fire this much before its tick and still be for it. */
const EARLY_MS = 20;

/**
 * The tick a timer that fired at `firedAt` served: a cron timer fires at most EARLY_MS before its tick and any
 * time after it (a loaded machine: hundreds of ms), so the tick is the last one at or before firedAt + EARLY_MS.
 * (Rounding instead gave a timer 500+ ms late to the next tick, which then seemed to run twice.)
 */
const tickOf = (firedAt: number) => Math.floor((firedAt + EARLY_MS) / PERIOD) * PERIOD;

interface Run {
  readonly instance: number;
  /** When the instance's timer fired (before its simulated lateness). */
  readonly firedAt: number;
  readonly start: number;
  readonly end: number;
}

interface Observation {
  readonly runs: Run[];
  /** How often each instance's timer fired within the observed ticks. */
  readonly attempts: number[];
  /** From the first whole tick after every instance was ready to the last tick before they stopped. */
  readonly from: number;
  readonly to: number;
  /** Per tick, how late its latest instance really asked for the lock (ms after the tick). */
  readonly lateness: Map<number, number>;
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

describe('scheduled ticks across 3 instances in separate processes (3 real nodes)', () => {
  const progress = reportProgress('scheduled ticks');
  let build: TreeBuild;
  const started: RedisNodes[] = [];
  jest.setTimeout(60_000);

  beforeAll(() => {
    build = transpileTree(path.join(__dirname, 'ticks', 'tick-app.ts'), 'ticks', true);
    startAll();
  });
  afterAll(async () => {
    await Promise.allSettled(scenarios.values());
    build?.dispose();
    await Promise.all(started.map((nodes) => nodes.stop()));
  });

  /**
   * Each scenario watches 12 s of real ticks; they run side by side, each on 3 nodes of its own (no shared
   * keys), all started before the first test so the file takes one watch instead of five.
   */
  const scenarios = new Map<string, Promise<Observation>>();
  function scenario(
    job: 'cron' | 'interval',
    bodyMs: number,
    oncePerTick: boolean,
    skews: readonly number[] = SKEWS,
  ): Promise<Observation> {
    const name = `${job}/${bodyMs}/${oncePerTick}/${skews.join(',')}`;
    if (!scenarios.has(name)) {
      const observation = startRedisNodes(3).then((nodes) => {
        started.push(nodes);
        return observe(nodes, job, bodyMs, oncePerTick, skews);
      });
      observation.catch(() => undefined); // awaited by its test; not an unhandled rejection meanwhile
      scenarios.set(name, observation);
    }
    return scenarios.get(name)!;
  }
  /** Every scenario of this file, started at once. */
  function startAll(): void {
    progress.phase('5 scenarios side by side (@Cron and @Interval, 12 s of ticks each)');
    scenario('cron', 0, true, SKEWS_TO_BOUND);
    scenario('cron', 0, true, [0, 0, 0]);
    scenario('cron', 0, false, SKEWS_TO_BOUND);
    scenario('cron', 1_500, true);
    scenario('interval', 0, true);
  }

  async function observe(
    nodes: RedisNodes,
    job: 'cron' | 'interval',
    bodyMs: number,
    oncePerTick: boolean,
    skews: readonly number[] = SKEWS,
  ): Promise<Observation> {
    const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ticks-')), 'runs.jsonl');
    fs.writeFileSync(log, '');
    const started = skews.map((skew, instance) => {
      const child = fork(build.entry, [], {
        env: {
          ...process.env,
          NODE_PATH: build.nodePath,
          NODES: JSON.stringify(nodes.urls),
          INSTANCE: String(instance),
          SKEW_MS: String(skew),
          BODY_MS: String(bodyMs),
          ONCE_PER_TICK: oncePerTick ? '1' : '0',
          JOB: job,
          LOG: log,
        },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      children.add(child);
      const fired: number[] = [];
      const firedListeners = new Set<() => void>();
      child.on('message', (message: { fired?: number }) => {
        if (typeof message?.fired !== 'number') return;
        fired.push(message.fired);
        for (const listener of firedListeners) listener();
      });
      /** Resolves once this instance's timer fired at or after `at` (epoch ms). */
      const firedSince = (at: number) =>
        new Promise<void>((resolve) => {
          const check = () => {
            if (!fired.some((t) => t >= at)) return;
            firedListeners.delete(check);
            resolve();
          };
          firedListeners.add(check);
          check();
        });
      const ready = new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) =>
          reject(new Error(`instance ${instance} exited with ${code} before it was ready`)),
        );
      });
      return { child, ready, firedSince };
    });
    await Promise.all(started.map((s) => s.ready));
    // Interval timers start at boot: let every instance's first period pass before counting.
    const from = Math.ceil((Date.now() + PERIOD + 300) / PERIOD) * PERIOD;
    // Watch the ticks themselves: until every instance's timer fired for the tick WATCH_MS after `from`.
    await Promise.all(started.map((s) => s.firedSince(from + WATCH_MS - EARLY_MS)));
    const to = Date.now() - PERIOD - 500;
    // Each instance closes its application and exits: a close that hangs is a failure (the time limit), not
    // something to kill and analyse as if it had stopped.
    await Promise.all(
      started.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.send('stop');
          }),
      ),
    );
    for (const { child } of started) children.delete(child);
    const lines = fs
      .readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Run & { attempt?: number; lockedAfter?: number; at?: number });
    fs.rmSync(path.dirname(log), { recursive: true, force: true });
    const attempts = skews.map(
      (_, instance) =>
        lines.filter(
          (l) =>
            l.instance === instance && l.attempt !== undefined && l.attempt >= from - 100 && l.attempt <= to,
        ).length,
    );
    const lateness = new Map<number, number>();
    for (const line of lines) {
      if (line.lockedAfter === undefined || line.at === undefined) continue;
      const tick = tickOf(line.lockedAfter);
      lateness.set(tick, Math.max(lateness.get(tick) ?? 0, line.at - tick));
    }
    const runs = lines.filter((line) => line.attempt === undefined && line.lockedAfter === undefined);
    return { runs, attempts, from, to, lateness };
  }

  /** Runs per cron tick (the whole second its timer fired for), over the observed ticks. */
  function runsPerTick({ runs, from, to }: Observation): Map<number, number> {
    const counts = new Map<number, number>();
    for (let tick = from; tick <= to; tick += PERIOD) counts.set(tick, 0);
    for (const run of runs) {
      const tick = tickOf(run.firedAt);
      if (counts.has(tick)) counts.set(tick, counts.get(tick)! + 1);
    }
    return counts;
  }

  function overlaps(runs: readonly Run[]): number {
    const sorted = [...runs].sort((a, b) => a.start - b.start);
    let count = 0;
    for (let i = 1; i < sorted.length; i++) if (sorted[i].start < sorted[i - 1].end) count++;
    return count;
  }

  function report(name: string, counts: number[]): void {
    const tally = (n: number) => counts.filter((count) => count === n).length;
    console.log(
      `${name}: ${counts.length} ticks — ${tally(1)} once, ${tally(2)} twice, ${counts.filter((c) => c > 2).length} more, ${tally(0)} never`,
    );
  }

  it('@Cron every second, instant body, timers up to 700 ms late: every tick runs exactly once', async () => {
    const observation = await scenario('cron', 0, true, SKEWS_TO_BOUND);
    const perTick = runsPerTick(observation);
    const counts = [...perTick.values()];
    report('cron, instant body, skews 0/100/250/700 ms', counts);
    expect(counts.length).toBeGreaterThanOrEqual(10);
    // The claim holds for instances up to the bound late: a loaded machine (a CPU hog beside the suite: 3 of 11
    // ticks measured past it) can make the 700 ms instance later than that, and such a tick is outside the
    // claim. The claim is checked on the ticks inside it, which must be at least half of them.
    const withinBound = [...perTick].filter(([tick]) => (observation.lateness.get(tick) ?? 0) <= BOUND);
    expect(withinBound.length).toBeGreaterThanOrEqual(Math.ceil(counts.length / 2));
    expect(withinBound.map(([, count]) => count)).toEqual(withinBound.map(() => 1));
    // The scenario happened: every instance's timer fired for (nearly) every tick, so the skips were real.
    for (const fired of observation.attempts) expect(fired).toBeGreaterThanOrEqual(counts.length - 1);
  });

  it('@Cron every second, instant body, three timers firing together: no tick lost to a split vote', async () => {
    const observation = await scenario('cron', 0, true, [0, 0, 0]);
    const perTick = runsPerTick(observation);
    const counts = [...perTick.values()];
    report('cron, instant body, no skew', counts);
    expect(counts.length).toBeGreaterThanOrEqual(10);
    // As above: a tick whose timers a loaded machine fired past the bound is outside the claim.
    const withinBound = [...perTick].filter(([tick]) => (observation.lateness.get(tick) ?? 0) <= BOUND);
    expect(withinBound.length).toBeGreaterThanOrEqual(Math.ceil(counts.length / 2));
    expect(withinBound.map(([, count]) => count)).toEqual(withinBound.map(() => 1));
    for (const fired of observation.attempts) expect(fired).toBeGreaterThanOrEqual(counts.length - 1);
  });

  it('negative control: releasing when the body returns (oncePerTick: false) runs ticks more than once', async () => {
    const counts = [...runsPerTick(await scenario('cron', 0, false, SKEWS_TO_BOUND)).values()];
    report('negative control (oncePerTick: false)', counts);
    expect(counts.length).toBeGreaterThanOrEqual(10);
    expect(counts.filter((count) => count > 1).length).toBeGreaterThan(counts.length / 2);
  });

  it('@Cron every second, body of 1.5 s: never concurrent, each tick at most once, skipped only while running', async () => {
    const observation = await scenario('cron', 1_500, true);
    const perTick = runsPerTick(observation);
    report('cron, 1.5 s body', [...perTick.values()]);
    expect([...perTick.values()].every((count) => count <= 1)).toBe(true);
    expect(overlaps(observation.runs)).toBe(0);
    const ran = [...perTick.values()].filter((count) => count === 1).length;
    expect(ran).toBeGreaterThanOrEqual(4);
    for (const [tick, count] of perTick) {
      if (count > 0) continue;
      // A skipped tick came while a run was in progress or had just ended (kept until the next tick).
      expect(observation.runs.some((run) => run.start <= tick + 300 && tick <= run.end + PERIOD)).toBe(true);
    }
  });

  it('@Interval(1000), instant body: one run per period across the instances, none missed', async () => {
    const { runs, attempts, from, to } = await scenario('interval', 0, true);
    for (const fired of attempts) expect(fired).toBeGreaterThanOrEqual(10);
    const counted = runs
      .filter((run) => run.start >= from && run.start <= to)
      .sort((a, b) => a.start - b.start);
    expect(counted.length).toBeGreaterThanOrEqual(10);
    const gaps = counted.slice(1).map((run, i) => run.start - counted[i].start);
    console.log(
      `interval: ${counted.length} runs in ${to - from} ms, gaps ${Math.min(...gaps)}–${Math.max(...gaps)} ms`,
    );
    // Never twice within a period (less the 250 ms margin), never a period without a run.
    expect(gaps.filter((gap) => gap < PERIOD - 250 - 50)).toEqual([]);
    expect(gaps.filter((gap) => gap > PERIOD + 150)).toEqual([]);
    expect(counted.length).toBeLessThanOrEqual(Math.ceil((to - from) / (PERIOD - 300)) + 1);
  });
});
