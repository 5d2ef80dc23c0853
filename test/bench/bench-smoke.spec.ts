import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { IMPLEMENTATIONS, ImplName, Implementation, runsIn } from '../../bench/adapters';
import { scaleProfile } from '../../bench/config';
import { runBench } from '../../bench/run';
import { runFiles, runMany } from '../../bench/multi-run';
import { DocFiles, TABLE_END, TABLE_START } from '../../bench/report/docs';
import { scenarioTable } from '../../bench/report/markdown';
import { BenchRun, BenchSummary, loadRuns, summarize, summaryMarkdown } from '../../bench/report/summary';
import { TARGETS, checkTargets } from '../../bench/report/targets';
import type { BenchResults } from '../../bench/report/types';
import { writeRun, writeSummary } from '../../bench/report/write';
import { Metric, SCENARIOS, ScenarioId, ScenarioResult } from '../../bench/scenarios';
import { RESULT_MARKER, eachInOwnProcess, encodeRow, runInChild } from '../../bench/scenarios/isolated';
import { FAIRNESS_IMPLS, NO_EXCLUSION, measureFairness } from '../../bench/scenarios/fairness';
import { memory } from '../../bench/scenarios/memory';
import { RedisNodes, startRedisNodes } from '../support';

/**
 * The benchmark (`npm run bench`) is not part of the tests, but this runs every scenario through the same
 * code with tiny counts on 3 nodes, so it cannot rot. Structure only: no assertion on speed (DESIGN §4).
 */
describe('bench smoke (BENCH_SCALE=smoke)', () => {
  let results: BenchResults;
  let dir: string;
  /** For the one-process-failing test below: started first, so they are past the restart guard by then. */
  let spareNodes: RedisNodes | undefined;

  beforeAll(async () => {
    spareNodes = await startRedisNodes(3);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-bench-smoke-'));
    ({ results } = await runBench({
      scale: scaleProfile('smoke'),
      nodes: 3,
      outDir: dir,
      only: SCENARIOS.map((scenario) => scenario.id),
      impls: IMPLEMENTATIONS,
      log: () => undefined,
    }));
    // A limit, not a measure: with scenario 10 (6 processes) this file took 87 s at load 10 on 2 cores, 139 s
    // beside a CPU hog.
  }, 240_000);

  afterAll(async () => {
    await spareNodes?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Every metric of every row is a finite number. */
  function expectFiniteFigures(scenario: ScenarioResult): void {
    for (const [row, figures] of Object.entries(scenario.rows)) {
      for (const metric of scenario.metrics) {
        const value = figures[metric.key];
        if (!Number.isFinite(value)) {
          throw new Error(
            `scenario ${scenario.id}, ${row}: ${metric.key} is ${value}, expected a finite number`,
          );
        }
      }
    }
  }

  it('has a result for every scenario', () => {
    expect(Object.keys(results.scenarios).sort()).toEqual(SCENARIOS.map((s) => s.id).sort());
  });

  it.each(['uncontended', 'throughput', 'slowNode', 'scale', 'memory', 'heldScale'] as const)(
    '%s: ran, with a row of finite figures for every implementation',
    (id) => {
      const scenario = results.scenarios[id]!;
      expect(scenario.status).toBe('ok');
      const taking = IMPLEMENTATIONS.filter((impl) => runsIn(impl, id)).map((impl) => impl.name);
      expect(Object.keys(scenario.rows).sort()).toEqual(taking.sort());
      expect(scenario.metrics.length).toBeGreaterThan(0);
      expectFiniteFigures(scenario);
    },
  );

  it('contention: ran for every implementation that retries (the raw floor does not)', () => {
    const scenario = results.scenarios.contention!;
    expect(scenario.status).toBe('ok');
    const retrying = IMPLEMENTATIONS.filter((impl) => impl.retries && runsIn(impl, 'contention')).map(
      (impl) => impl.name,
    );
    expect(Object.keys(scenario.rows).sort()).toEqual([...retrying].sort());
    expectFiniteFigures(scenario);
    for (const figures of Object.values(scenario.rows)) expect(figures.overlaps).toBe(0);
  });

  it('fairness: ran across processes for nestjs-redlock, node-redlock and redlock-universal, with finite figures and no overlap', () => {
    const scenario = results.scenarios.fairness!;
    expect(scenario.status).toBe('ok');
    expect(Object.keys(scenario.rows).sort()).toEqual([...FAIRNESS_IMPLS].sort());
    expectFiniteFigures(scenario);
    for (const figures of Object.values(scenario.rows)) {
      // The scenario happened: the lock changed hands, and the checks had holds to compare.
      expect(figures.grantsPerSec).toBeGreaterThan(0);
      expect(figures.overlaps).toBe(0);
    }
    expect(scenario.notes.join(' ')).toMatch(/2 Node processes × 2 workers/);
  });

  it('fairness, negative control: with a lock that excludes nobody, the processes report overlapping holds', async () => {
    const smoke = scaleProfile('smoke');
    const short = { ...smoke, fairness: { ...smoke.fairness, durationMs: 200 } };
    const row = await measureFairness(NO_EXCLUSION, [], short, () => undefined);
    expect(row.overlaps).toBeGreaterThan(0);
  }, 30_000);

  it('scale: one p50 per node count (1 and 3 in smoke) plus the growth ratio, and client CPU per count', () => {
    const keys = results.scenarios.scale!.metrics.map((metric) => metric.key);
    expect(keys).toEqual(['p50n1', 'p50n3', 'growth', 'cpun1', 'cpun3']);
  });

  it('heldScale: CPU, Redis CPU, heap and RSS per held lock for each count (20 and 50 in smoke)', () => {
    const keys = results.scenarios.heldScale!.metrics.map((metric) => metric.key);
    for (const count of [20, 50]) {
      for (const figure of ['cpuPct', 'cpuUs', 'redisUs', 'heapKB', 'rssKB', 'failures'])
        expect(keys).toContain(`${figure}${count}`);
    }
  });

  it('decorator: measures the three faces of the library, or says why the Nest layer is missing', () => {
    const scenario = results.scenarios.decorator!;
    if (scenario.status === 'skipped') {
      // Only acceptable while lib/index.ts does not export the Nest layer; a broken layer must fail here.
      expect(scenario.reason).toMatch(/^skipped: Nest layer not available/);
      return;
    }
    expect(Object.keys(scenario.rows)).toHaveLength(3);
    expect(Object.keys(scenario.rows)).toContain(scenario.baseline);
    expectFiniteFigures(scenario);
  });

  it('checks every target, each once, covering every scenario', () => {
    expect(results.targets.map((target) => target.id)).toEqual(TARGETS.map((target) => target.id));
    expect(new Set(results.targets.map((target) => target.id)).size).toBe(TARGETS.length);
    const covered = new Set(results.targets.map((target) => target.scenario));
    expect([...covered].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it('targets: a value and a verdict together, or n/a with the reason — never one without the other', () => {
    for (const target of results.targets) {
      if (target.met === null) {
        expect(target.value).toBeNull();
        expect(target.measured).toMatch(/^n\/a \(.+\)$/);
      } else {
        expect(Number.isFinite(target.value)).toBe(true);
        expect(target.measured).not.toMatch(/n\/a/);
      }
    }
  });

  it('targets in smoke: latency and throughput ratios measured; 9 nodes and 10,000 held locks n/a (not in this scale)', () => {
    const byId = new Map(results.targets.map((target) => [target.id, target]));
    for (const target of results.targets.filter((t) => [1, 2, 4].includes(t.scenario)))
      expect(target.met).not.toBeNull();
    for (const target of results.targets.filter((t) => [5, 7, 8].includes(t.scenario))) {
      expect(target.met).toBeNull();
      expect(target.measured).toMatch(/in this scale/);
    }
    // The ratio is the one of the figures in the tables.
    const rows = results.scenarios.throughput!.rows;
    expect(byId.get('s2-throughput-vs-node-redlock')!.value).toBeCloseTo(
      rows['nestjs-redlock'].opsPerSec / rows['node-redlock'].opsPerSec,
      10,
    );
  });

  it('writes latest.json, latest.md (a table per scenario) and chart.svg', () => {
    const json = JSON.parse(fs.readFileSync(path.join(dir, 'latest.json'), 'utf8')) as BenchResults;
    expect(Object.keys(json.scenarios).sort()).toEqual(SCENARIOS.map((s) => s.id).sort());
    expect(json.meta.scale).toBe('smoke');

    const markdown = fs.readFileSync(path.join(dir, 'latest.md'), 'utf8');
    for (const scenario of SCENARIOS) expect(markdown).toContain(`### ${scenario.number}. ${scenario.title}`);
    for (const impl of IMPLEMENTATIONS) expect(markdown).toContain(impl.name);

    const svg = fs.readFileSync(path.join(dir, 'chart.svg'), 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg).not.toMatch(/NaN|undefined/);
    expect(svg.match(/<rect [^>]*fill="#e0234e"/g)?.length).toBeGreaterThanOrEqual(3);
  });

  describe('scenarios 7 and 8: each implementation in a process of its own', () => {
    const smoke = scaleProfile('smoke');
    const unknown: Implementation = { ...IMPLEMENTATIONS[1], name: 'no-such-impl' as ImplName };
    const job = { scenario: 'memory' as const, impl: unknown.name, urls: [], scale: smoke };
    let dir: string;
    beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-bench-child-'))));
    afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

    /** A child entry point that runs `code` (plain JavaScript). */
    function entry(name: string, code: string) {
      const file = path.join(dir, `${name}.js`);
      fs.writeFileSync(file, code);
      return { file, nodePath: '' };
    }
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const pidIn = (lines: string[]) =>
      Number(/^pid (\d+)$/.exec(lines.find((l) => l.startsWith('pid ')) ?? '')?.[1]);

    it('the notes say so', () => {
      for (const id of ['memory', 'heldScale'] as const)
        expect(results.scenarios[id]!.notes.join(' ')).toMatch(/process of its own/);
    });

    it("a child's log lines reach the log; one that fails gives its reason; one that hangs is killed at the timeout", async () => {
      const lines: string[] = [];
      const failing = entry(
        'failing',
        "console.log('hello from the child'); console.error('Error: boom'); process.exit(3);",
      );
      await expect(runInChild(failing, job, (l) => lines.push(l), { timeoutMs: 10_000 })).rejects.toThrow(
        'its process exited with code 3 without a result: Error: boom',
      );
      expect(lines).toContain('hello from the child');

      const hanging = entry(
        'hanging',
        "console.log('pid ' + process.pid); setInterval(() => undefined, 1000);",
      );
      const hung: string[] = [];
      await expect(runInChild(hanging, job, (l) => hung.push(l), { timeoutMs: 1_000 })).rejects.toThrow(
        'its process did not finish within 1 s (killed) without a result',
      );
      expect(alive(pidIn(hung))).toBe(false);
    });

    it('a result is kept (NaN and ∞ too) from a child that does not exit after it, which is killed', async () => {
      const row = { a: 1.5, nan: NaN, inf: Infinity };
      const lingering = entry(
        'lingering',
        `console.log('pid ' + process.pid); console.log(${JSON.stringify(RESULT_MARKER + encodeRow(row))}); setInterval(() => undefined, 1000);`,
      );
      const lines: string[] = [];
      const got = await runInChild(lingering, job, (l) => lines.push(l), {
        timeoutMs: 10_000,
        exitGraceMs: 200,
      });
      expect(got).toEqual(row);
      expect(lines.some((l) => /did not exit 0.2 s after its result; killed/.test(l))).toBe(true);
      expect(alive(pidIn(lines))).toBe(false);
    });

    it('every process failing: an error with the reason (the scenario is then skipped with it)', async () => {
      await expect(
        eachInOwnProcess([unknown], () => job, { scale: smoke, log: () => undefined, label: '7 memory' }),
      ).rejects.toThrow(
        /every implementation's process failed; no-such-impl: no figures — .*no implementation named no-such-impl/,
      );
    });

    it('one process failing: that implementation gets an empty row and a note with the reason, the others their figures', async () => {
      const nodes = spareNodes!;
      const scenario = await memory.run({
        scale: smoke,
        nodes,
        urls: nodes.urls,
        impls: [IMPLEMENTATIONS[0], unknown],
        results: {},
        log: () => undefined,
      });
      expect(scenario.status).toBe('ok');
      expect(Object.keys(scenario.rows)).toEqual([IMPLEMENTATIONS[0].name, unknown.name]);
      expect(scenario.rows[unknown.name]).toEqual({});
      expect(scenario.notes).toContainEqual(
        expect.stringMatching(/^no-such-impl: no figures — .*no implementation named/),
      );
      expectFiniteFigures({
        ...scenario,
        rows: { [IMPLEMENTATIONS[0].name]: scenario.rows[IMPLEMENTATIONS[0].name] },
      });
      // Its row in the table: a dash per figure.
      const row = scenarioTable(scenario).find((line) => line.startsWith('| no-such-impl |'))!;
      expect(
        row
          .split('|')
          .slice(2, -1)
          .map((cell) => cell.trim()),
      ).toEqual(scenario.metrics.map(() => '—'));
    }, 60_000);
  });

  describe('several runs: k of N, medians, the generated tables', () => {
    /** Targets the fakes below force: held in `passing`, missed in `failing`. */
    const FORCED = ['s2-throughput-vs-node-redlock', 's7-held-cpu', 's8-flat-cpuUs'];

    function setFigure(run: BenchResults, id: ScenarioId, row: string, key: string, value: number): void {
      const scenario = run.scenarios[id]!;
      (scenario.rows[row] ??= {})[key] = value;
      if (!scenario.metrics.some((metric) => metric.key === key))
        (scenario.metrics as Metric[]).push({ key, label: key, unit: '', better: 'lower' });
    }

    /**
     * The smoke run, with the figures of a few targets set: throughput 3 × node-redlock, nobody gave up,
     * 10,000 held locks at 3 % of a core and scenario 8 at 10,000 and 100,000 held; `bad` turns the forced
     * targets into misses (1 ×, 7 %, per-lock CPU doubling).
     */
    function fakeRun(startedAt: string, bad: boolean, scale = 'smoke'): BenchResults {
      const run = JSON.parse(JSON.stringify(results)) as BenchResults;
      (run.meta as { startedAt: string }).startedAt = startedAt;
      (run.meta as { scale: string }).scale = scale;
      setFigure(run, 'throughput', 'node-redlock', 'opsPerSec', 1_000);
      setFigure(run, 'throughput', 'nestjs-redlock', 'opsPerSec', bad ? 1_000 : 3_000);
      setFigure(run, 'contention', 'nestjs-redlock', 'gaveUp', 0);
      for (const row of ['nestjs-redlock', 'node-redlock']) setFigure(run, 'memory', row, 'held', 10_000);
      setFigure(run, 'memory', 'nestjs-redlock', 'holdCpuPct', bad ? 7 : 3);
      setFigure(run, 'heldScale', 'nestjs-redlock', 'cpuUs10000', 2);
      setFigure(run, 'heldScale', 'nestjs-redlock', 'cpuUs100000', bad ? 4 : 2.5);
      return run;
    }

    const runOf = (file: string, run: BenchResults): BenchRun => ({ file, results: run });
    const target = (summary: BenchSummary, id: string) => summary.targets.find((t) => t.id === id)!;

    it('the forced figures give the forced verdicts (the fakes test what they claim)', () => {
      const good = checkTargets(fakeRun('2030-01-01T00:00:00.000Z', false).scenarios);
      const bad = checkTargets(fakeRun('2030-01-01T00:00:00.000Z', true).scenarios);
      for (const id of FORCED) {
        expect(good.find((t) => t.id === id)!.met).toBe(true);
        expect(bad.find((t) => t.id === id)!.met).toBe(false);
      }
      expect(good.find((t) => t.id === 's2-throughput-vs-node-redlock')!.value).toBeCloseTo(3, 10);
      expect(good.find((t) => t.id === 's8-flat-cpuUs')!.value).toBeCloseTo(1.25, 10);
    });

    it('counts "met in k of N": a run where a target fails lowers k (negative control), n/a is counted apart', () => {
      const a = fakeRun('2030-01-01T00:00:00.000Z', false);
      const again = fakeRun('2030-01-02T00:00:00.000Z', false);
      const failing = fakeRun('2030-01-02T00:00:00.000Z', true);
      const both = summarize([runOf('1.json', a), runOf('2.json', again)]);
      // Given out of order: the summary orders the runs by their start.
      const mixed = summarize([runOf('2.json', failing), runOf('1.json', a)]);
      expect(mixed.runs.map((run) => run.file)).toEqual(['1.json', '2.json']);
      for (const id of FORCED) {
        expect(target(both, id)).toMatchObject({ met: 2, missed: 0, na: 0 });
        expect(target(mixed, id)).toMatchObject({ met: 1, missed: 1, na: 0 });
        expect(target(mixed, id).checks.map((check) => check.met)).toEqual([true, false]);
      }
      expect(target(mixed, 's3-gave-up')).toMatchObject({ met: 2, missed: 0, na: 0 });
      expect(target(mixed, 's5-fan-out-growth-vs-floor')).toMatchObject({
        met: 0,
        missed: 0,
        na: 2,
        median: null,
      });
      for (const t of mixed.targets) expect(t.met + t.missed + t.na).toBe(2);
      // Each target's own figure: median and range over the runs.
      expect(target(mixed, 's2-throughput-vs-node-redlock')).toMatchObject({ min: 1, max: 3 });
      expect(target(mixed, 's2-throughput-vs-node-redlock').median).toBeCloseTo(2, 10);
      expect(mixed.scenarios.throughput!.rows['nestjs-redlock'].opsPerSec).toBe(2_000);

      const markdown = summaryMarkdown(mixed);
      const row = markdown.split('\n').find((line) => line.includes("throughput ≥ 1.5 × node-redlock's"))!;
      expect(row).toContain('| 3.00× | **1.00×** ✗ | 2.00× | 1 of 2 runs |');
      expect(markdown).toContain('n/a in all 2 runs');
    });

    it('reads runs back from disk with the figures the run checked its targets against', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-bench-runs-'));
      try {
        for (const n of [2, 10, 9])
          writeRun(
            fakeRun(`2030-01-${String(n).padStart(2, '0')}T00:00:00.000Z`, false),
            path.join(dir, `${n}.json`),
          );
        fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a run');
        expect(runFiles(dir).map((file) => path.basename(file))).toEqual(['2.json', '9.json', '10.json']);
        const run = fakeRun('2030-01-01T00:00:00.000Z', true);
        writeRun(run, path.join(dir, '2.json'));
        const [loaded] = loadRuns([path.join(dir, '2.json')]);
        expect(checkTargets(loaded.results.scenarios)).toEqual(checkTargets(run.scenarios));
        expect(loadRuns([dir])).toHaveLength(3);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('--runs N keeps each run as runs/<n>.json, numbers after the runs kept, leaves failed runs out, --fresh starts over', async () => {
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-bench-multi-'));
      let day = 0;
      const runOne =
        (bad: boolean, code = 0) =>
        async (file: string) => {
          if (code === 0)
            writeRun(fakeRun(`2030-01-${String(++day).padStart(2, '0')}T00:00:00.000Z`, bad), file);
          return code;
        };
      const names = () => runFiles(path.join(out, 'runs')).map((file) => path.basename(file));
      const options = { outDir: out, fresh: false, pauseMs: 0, docs: false as const, log: () => undefined };
      try {
        const first = await runMany({ ...options, runs: 2, runOne: runOne(false) });
        expect(first.failed).toBe(0);
        expect(names()).toEqual(['1.json', '2.json']);
        const second = await runMany({ ...options, runs: 1, runOne: runOne(true) });
        expect(names()).toEqual(['1.json', '2.json', '3.json']);
        const summary = JSON.parse(fs.readFileSync(second.summary.json, 'utf8')) as BenchSummary;
        expect(summary.runs).toHaveLength(3);
        expect(target(summary, 's7-held-cpu')).toMatchObject({ met: 2, missed: 1 });
        expect(fs.readFileSync(second.summary.markdown, 'utf8')).toMatch(
          /^# nestjs-redlock benchmark: 3 runs/,
        );

        const failed = await runMany({ ...options, runs: 1, runOne: runOne(false, 1) });
        expect(failed.failed).toBe(1);
        expect(names()).toHaveLength(3);

        await runMany({ ...options, runs: 1, fresh: true, runOne: runOne(false) });
        expect(names()).toEqual(['1.json']);
      } finally {
        fs.rmSync(out, { recursive: true, force: true });
      }
    });

    describe('README.md and docs/BENCHMARKS.md tables', () => {
      let dir: string;
      let docs: DocFiles;
      const README = [
        '# x',
        '',
        '```ts',
        "const kept: string = 'untouched';",
        '```',
        '',
        TABLE_START,
        'old table',
        TABLE_END,
        '',
        'after',
        '',
      ].join('\n');
      const BENCHMARKS = ['# Benchmarks', '', TABLE_START, '| old |', TABLE_END, '', 'Prose.', ''].join('\n');

      beforeEach(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-bench-docs-'));
        fs.mkdirSync(path.join(dir, 'docs'));
        docs = { readme: path.join(dir, 'README.md'), benchmarks: path.join(dir, 'docs', 'BENCHMARKS.md') };
        fs.writeFileSync(docs.readme, README);
        fs.writeFileSync(docs.benchmarks, BENCHMARKS);
      });
      afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

      const twoRuns = (scale: string) =>
        summarize([
          runOf('1.json', fakeRun('2030-01-01T00:00:00.000Z', false, scale)),
          runOf('2.json', fakeRun('2030-01-02T00:00:00.000Z', true, scale)),
        ]);

      it('left alone for smoke runs', () => {
        const files = writeSummary(twoRuns('smoke'), path.join(dir, 'results'), docs);
        expect(files.docs).toEqual([]);
        expect(files.docsSkipped).toMatch(/smoke/);
        expect(fs.readFileSync(docs.readme, 'utf8')).toBe(README);
        expect(fs.readFileSync(docs.benchmarks, 'utf8')).toBe(BENCHMARKS);
      });

      it('rewritten between the markers only, with "held in k of N" per figure and the runs\' date and machine', () => {
        const summary = twoRuns('full');
        const files = writeSummary(summary, path.join(dir, 'results'), docs);
        expect([...files.docs].sort()).toEqual([docs.benchmarks, docs.readme].sort());
        const readme = fs.readFileSync(docs.readme, 'utf8');
        const benchmarks = fs.readFileSync(docs.benchmarks, 'utf8');
        for (const [text, before] of [
          [readme, README],
          [benchmarks, BENCHMARKS],
        ]) {
          expect(text.slice(0, text.indexOf(TABLE_START))).toBe(before.slice(0, before.indexOf(TABLE_START)));
          expect(text.slice(text.indexOf(TABLE_END))).toBe(before.slice(before.indexOf(TABLE_END)));
          expect(text).not.toMatch(/old table|\| old \|/);
          expect(text).toContain('2 full runs, 2030-01-01 – 2030-01-02, on ');
          expect(text).toContain(summary.machines[0]);
        }
        const line = (text: string, part: string) => text.split('\n').find((l) => l.includes(part))!;
        expect(line(readme, '2. throughput')).toMatch(/\| ≥ 1\.5 × node-redlock \| 1 of 2 runs \|$/);
        expect(line(readme, '3. contention on one key: wait p99')).toMatch(/\| \d+ of 2 runs \|$/);
        expect(readme).toContain('[docs/BENCHMARKS.md](docs/BENCHMARKS.md)');
        expect(line(benchmarks, "throughput ≥ 1.5 × node-redlock's")).toContain(
          '| 2.00× (1.00× – 3.00×) | 1 of 2 runs |',
        );
        expect(line(benchmarks, 'p50 growth from 1 to 9 nodes')).toContain('| n/a | n/a in all 2 runs |');
        expect(benchmarks).toContain('](../results/summary.md)');
        // Written again from the same summary: the same files.
        writeSummary(summary, path.join(dir, 'results'), docs);
        expect(fs.readFileSync(docs.readme, 'utf8')).toBe(readme);
        expect(fs.readFileSync(docs.benchmarks, 'utf8')).toBe(benchmarks);
      });

      it('a file without the markers: an error, and neither file written', () => {
        fs.writeFileSync(docs.readme, '# no markers\n');
        expect(() => writeSummary(twoRuns('full'), path.join(dir, 'results'), docs)).toThrow(/markers/);
        expect(fs.readFileSync(docs.readme, 'utf8')).toBe('# no markers\n');
        expect(fs.readFileSync(docs.benchmarks, 'utf8')).toBe(BENCHMARKS);
      });
    });
  });
});
