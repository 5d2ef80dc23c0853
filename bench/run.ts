import * as os from 'node:os';
import * as path from 'node:path';
import { startRedisNodes, waitForNodeAge } from '../test/support';
import { Implementation, runsIn, selectImplementations } from './adapters';
import { HELD_100K, ScaleProfile, scaleFromEnv } from './config';
import { duration, estimateScenarios, estimateTotal } from './estimate';
import { checkTargets } from './report/targets';
import type { BenchResults } from './report/types';
import { WrittenFiles, writeResults, writeRun } from './report/write';
import { DEFAULT_OUT_DIR, REPO_DOCS, argFlag, argValue, reportSummary, runMany } from './multi-run';
import { BenchContext, SCENARIOS, ScenarioId, ScenarioResult } from './scenarios';
import { heldCounts } from './scenarios/held-scale';

export interface RunOptions {
  /** Default: from BENCH_SCALE. */
  readonly scale?: ScaleProfile;
  /** Nodes of the main set; default: the scale's. */
  readonly nodes?: number;
  /** Where latest.json / latest.md / chart.svg go; `false` writes nothing. Default bench/results. */
  readonly outDir?: string | false;
  /** Run only these scenarios (default: BENCH_ONLY, comma-separated ids, or all). */
  readonly only?: readonly ScenarioId[];
  /** Default: all (or BENCH_IMPLS). */
  readonly impls?: readonly Implementation[];
  readonly log?: (message: string) => void;
}

export { DEFAULT_OUT_DIR };

/**
 * Runs the benchmark once: starts the nodes (test/support), runs each scenario with every
 * implementation on the same nodes, checks the targets, writes the report, and stops the nodes.
 */
export async function runBench(
  options: RunOptions = {},
): Promise<{ results: BenchResults; files?: WrittenFiles }> {
  const scale = options.scale ?? scaleFromEnv();
  const log = options.log ?? ((message: string) => process.stderr.write(`${message}\n`));
  const impls = options.impls ?? selectImplementations();
  const only = options.only ?? envOnly();
  const mainCount = options.nodes ?? scale.nodes;
  const total = Math.max(mainCount, ...scale.scale.nodeCounts);
  const startedAt = new Date();
  const loadAtStart = os.loadavg()[0];
  const t0 = Date.now();

  for (const line of estimateLines(scale, impls, heldCounts(scale.heldScale), only)) log(line);
  log(`bench: scale ${scale.name}, starting ${total} redis nodes`);
  const nodes = await startRedisNodes(total);
  const scenarios: Partial<Record<ScenarioId, ScenarioResult>> = {};
  const seconds: Partial<Record<ScenarioId, number>> = {};
  let redis = `redis (${nodes.source})`;
  try {
    redis = `${await redisVersion(nodes.nodes[0].redis())} (${nodes.source})`;
    const context: BenchContext = {
      scale,
      nodes,
      urls: nodes.urls.slice(0, mainCount),
      impls,
      results: scenarios,
      log,
    };
    await waitForNodeAge(nodes, scale.ttl, log);
    for (const scenario of SCENARIOS) {
      if (only && only.length > 0 && !only.includes(scenario.id)) continue;
      log(`${scenario.number}. ${scenario.title}`);
      await nodes.flushAll();
      const began = Date.now();
      try {
        // The client variants of nestjs-redlock take part in scenarios 1–3 only.
        const own = context.impls.filter((impl) => runsIn(impl, scenario.id));
        scenarios[scenario.id] = await scenario.run({ ...context, impls: own });
        seconds[scenario.id] = (Date.now() - began) / 1000;
        log(`   ${seconds[scenario.id]!.toFixed(1)} s`);
      } catch (error) {
        log(`   failed: ${(error as Error).stack ?? String(error)}`);
        scenarios[scenario.id] = {
          id: scenario.id,
          number: scenario.number,
          title: scenario.title,
          status: 'skipped',
          reason: `failed: ${(error as Error).message}`,
          baseline: 'nestjs-redlock',
          metrics: [],
          rows: {},
          notes: [],
        };
      }
    }
  } finally {
    await nodes.stop();
  }

  const results: BenchResults = {
    meta: {
      startedAt: startedAt.toISOString(),
      durationSec: (Date.now() - t0) / 1000,
      scenarioSeconds: seconds,
      scale: scale.name,
      node: process.version,
      platform: `${os.platform()} ${os.arch()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
      redis,
      loadAverage: [loadAtStart, os.loadavg()[0]],
      nodes: mainCount,
      ttl: scale.ttl,
      rounds: scale.rounds,
      implementations: impls.map(({ name, pkg, settings }) => ({ name, pkg, settings })),
    },
    scenarios,
    targets: checkTargets(scenarios),
  };
  const outDir = options.outDir ?? DEFAULT_OUT_DIR;
  const files = outDir === false ? undefined : writeResults(results, outDir);
  return { results, files };
}

/** BENCH_ONLY=throughput,contention: those scenarios only. */
function envOnly(): ScenarioId[] | undefined {
  return process.env.BENCH_ONLY?.split(',').map((id) => id.trim()) as ScenarioId[] | undefined;
}

/** The estimate, one line per scenario and the total; with scenario 8 but not 100,000 held, what that would add. */
function estimateLines(
  scale: ScaleProfile,
  impls: readonly Implementation[],
  counts: readonly number[],
  only: readonly ScenarioId[] | undefined,
): string[] {
  const estimates = estimateScenarios(scale, impls, counts, only);
  const width = Math.max(...estimates.map((e) => `${e.number}. ${e.title}`.length));
  const lines = [
    'bench: estimated duration (from its settings; the costs behind it were measured on 2 cores):',
  ];
  for (const e of estimates)
    lines.push(`  ${`${e.number}. ${e.title}`.padEnd(width)}  ${duration(e.seconds)}`);
  lines.push(`  ${'total, with start-up'.padEnd(width)}  ${duration(estimateTotal(estimates))}`);
  if (estimates.some((e) => e.id === 'heldScale') && !counts.includes(HELD_100K)) {
    const held = (list: readonly number[]) => estimateScenarios(scale, impls, list, ['heldScale'])[0].seconds;
    const more = held([...counts, HELD_100K]) - held(counts);
    lines.push(`  (--held-100k adds scenario 8 with 100,000 locks held: about ${duration(more)} more)`);
  }
  return lines;
}

async function redisVersion(client: ReturnType<RedisNodesHandle['redis']>): Promise<string> {
  try {
    const info = await client.info('server');
    return `redis ${/redis_version:(\S+)/.exec(info)?.[1] ?? '?'}`;
  } catch {
    return 'redis';
  } finally {
    client.disconnect();
  }
}

type RedisNodesHandle = Awaited<ReturnType<typeof startRedisNodes>>['nodes'][number];

/**
 * `npm run bench`: one run (latest.*). `npm run bench -- --runs N` (or BENCH_RUNS=N): N runs, each in its own
 * process, kept as results/runs/<n>.json, then results/summary.{md,json} and the tables of README.md and
 * docs/BENCHMARKS.md (`--fresh` drops the runs already kept, `--pause S` idles S seconds between runs,
 * `--no-docs` leaves the docs alone). `--held-100k` adds 100,000 held locks to scenario 8 (as
 * BENCH_HELD_COUNTS=1000,10000,100000 does), which more than doubles a run.
 */
const OPTIONS = /^--(runs|pause)(=.*)?$|^--(fresh|no-docs|held-100k)$/;

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const unknown = argv.filter((arg, i) => !OPTIONS.test(arg) && !/^--(runs|pause)$/.test(argv[i - 1] ?? ''));
  // A mistyped option must not start a full run.
  if (unknown.length > 0)
    throw new Error(
      `unknown argument(s) ${unknown.join(' ')}; known: --runs N, --fresh, --pause S, --no-docs, --held-100k`,
    );
  if (argFlag(argv, 'held-100k')) {
    if (process.env.BENCH_HELD_COUNTS) throw new Error('--held-100k and BENCH_HELD_COUNTS: give one of them');
    // Through the environment, so the runs of --runs (each a process of its own) get it too.
    process.env.BENCH_HELD_COUNTS = [...scaleFromEnv().heldScale.counts, HELD_100K].join(',');
  }
  const outDir = process.env.BENCH_OUT || DEFAULT_OUT_DIR;
  const runsArg = argValue(argv, 'runs') ?? (process.env.BENCH_RUNS || undefined);
  if (runsArg !== undefined || argFlag(argv, 'runs')) {
    const runs = Number(runsArg);
    if (!Number.isInteger(runs) || runs < 1)
      throw new Error(`--runs wants a whole number ≥ 1, not ${runsArg}`);
    const pauseArg = argValue(argv, 'pause') ?? process.env.BENCH_PAUSE_S;
    const pause = pauseArg === undefined ? NaN : Number(pauseArg);
    if (pauseArg !== undefined && !(pause >= 0))
      throw new Error(`--pause wants seconds ≥ 0, not ${pauseArg}`);
    const scale = scaleFromEnv();
    const pauseMs = (Number.isFinite(pause) ? pause : scale.name === 'full' ? 30 : 0) * 1000;
    const one = estimateTotal(
      estimateScenarios(scale, selectImplementations(), heldCounts(scale.heldScale), envOnly()),
    );
    process.stderr.write(
      `bench: ${runs} run(s) of about ${duration(one)} each: about ${duration(runs * one + ((runs - 1) * pauseMs) / 1000)} in all\n`,
    );
    const { failed, summary } = await runMany({
      runs,
      outDir,
      fresh: argFlag(argv, 'fresh') || process.env.BENCH_FRESH === '1',
      pauseMs,
      docs: argFlag(argv, 'no-docs') ? false : REPO_DOCS,
      log: (message) => process.stderr.write(`${message}\n`),
    });
    reportSummary(summary);
    return failed > 0 ? 1 : 0;
  }

  const { results, files } = await runBench({ outDir });
  const runFile = process.env.BENCH_RUN_FILE;
  if (runFile) writeRun(results, runFile);
  const out = process.stdout;
  out.write(`\nTargets (${results.meta.durationSec.toFixed(0)} s run):\n`);
  for (const t of results.targets) {
    const mark = t.met === null ? ' n/a ' : t.met ? ' ok  ' : ' MISS';
    out.write(`  [${mark}] ${t.scenario}. ${t.target}: ${t.measured}\n`);
  }
  if (files) out.write(`\nWrote ${files.markdown}\n      ${files.json}\n      ${files.chart}\n`);
  if (runFile) out.write(`      ${runFile}\n`);
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
