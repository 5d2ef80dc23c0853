import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { IMPLEMENTATIONS } from '../../bench/adapters';
import { scaleProfile } from '../../bench/config';
import { runBench } from '../../bench/run';
import { SCENARIOS, ScenarioResult } from '../../bench/scenarios';
import type { BenchResults } from '../../bench/report/types';

/**
 * The benchmark (`npm run bench`) is not part of the tests, but this runs every scenario through the same
 * code with tiny counts on 3 nodes, so it cannot rot. Structure only: no assertion on speed (DESIGN §4).
 */
describe('bench smoke (BENCH_SCALE=smoke)', () => {
  let results: BenchResults;
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-bench-smoke-'));
    ({ results } = await runBench({
      scale: scaleProfile('smoke'),
      nodes: 3,
      outDir: dir,
      only: SCENARIOS.map((scenario) => scenario.id),
      impls: IMPLEMENTATIONS,
      log: () => undefined,
    }));
  }, 90_000);

  afterAll(() => {
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
      expect(Object.keys(scenario.rows).sort()).toEqual(IMPLEMENTATIONS.map((impl) => impl.name).sort());
      expect(scenario.metrics.length).toBeGreaterThan(0);
      expectFiniteFigures(scenario);
    },
  );

  it('contention: ran for every implementation that retries (the raw floor does not)', () => {
    const scenario = results.scenarios.contention!;
    expect(scenario.status).toBe('ok');
    const retrying = IMPLEMENTATIONS.filter((impl) => impl.retries).map((impl) => impl.name);
    expect(Object.keys(scenario.rows).sort()).toEqual([...retrying].sort());
    expectFiniteFigures(scenario);
    for (const figures of Object.values(scenario.rows)) expect(figures.overlaps).toBe(0);
  });

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

  it('checks a target of every scenario', () => {
    const covered = new Set(results.targets.map((target) => target.scenario));
    expect([...covered].sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    for (const target of results.targets)
      expect(target.met === null || typeof target.met === 'boolean').toBe(true);
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
});
