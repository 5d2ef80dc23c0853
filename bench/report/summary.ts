import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ScenarioId, ScenarioResult } from '../scenarios';
import { median } from '../stats';
import { cell, scenarioTable } from './markdown';
import { TargetCheck, checkTargets, formatTargetValue } from './targets';
import type { BenchResults } from './types';

/** One run's results and the file they were read from. */
export interface BenchRun {
  readonly file: string;
  readonly results: BenchResults;
}

/** One target over every run: its check in each run (run order), and how often it held. */
export interface TargetAcrossRuns {
  readonly id: string;
  readonly scenario: number;
  readonly target: string;
  readonly checks: readonly TargetCheck[];
  /** Runs where it held. */
  readonly met: number;
  /** Runs where it was measured and did not hold. */
  readonly missed: number;
  /** Runs where its figures were missing. */
  readonly na: number;
  /** Over the runs where it was measured; null when it never was. */
  readonly median: number | null;
  readonly min: number | null;
  readonly max: number | null;
}

export interface RunInfo {
  readonly file: string;
  readonly startedAt: string;
  readonly durationSec: number;
  readonly scale: string;
  readonly loadAverage: readonly [number, number];
  readonly machine: string;
}

/** Scenario figures: per row and metric, the median over the runs where the scenario ran. */
export interface MedianScenario extends ScenarioResult {
  /** How many runs the medians are taken over. */
  readonly runs: number;
}

export interface BenchSummary {
  readonly generatedAt: string;
  /** In the order they started. */
  readonly runs: readonly RunInfo[];
  /** The distinct machine descriptions and scales of the runs. */
  readonly machines: readonly string[];
  readonly scales: readonly string[];
  readonly targets: readonly TargetAcrossRuns[];
  readonly scenarios: Partial<Record<ScenarioId, MedianScenario>>;
}

/** The machine a run measured on, as one line. */
export function machineOf(results: BenchResults): string {
  const { meta } = results;
  return (
    `${meta.cpus} × ${meta.cpuModel}, ${meta.platform}, Node ${meta.node}, ${meta.redis}, ` +
    `${meta.nodes} local nodes`
  );
}

const distinct = (values: readonly string[]): string[] => [...new Set(values)];

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

/** `perRun`: each run's checks, all from {@link checkTargets}, so the same targets in the same order. */
function acrossRuns(perRun: readonly TargetCheck[][]): TargetAcrossRuns[] {
  const first = perRun[0] ?? [];
  return first.map((definition, index) => {
    const checks = perRun.map((checks) => checks[index]);
    const values = checks.map((check) => check.value).filter((v): v is number => v !== null);
    return {
      id: definition.id,
      scenario: definition.scenario,
      target: definition.target,
      checks,
      met: checks.filter((check) => check.met === true).length,
      missed: checks.filter((check) => check.met === false).length,
      na: checks.filter((check) => check.met === null).length,
      median: finiteOrNull(median(values)),
      min: values.length > 0 ? Math.min(...values) : null,
      max: values.length > 0 ? Math.max(...values) : null,
    };
  });
}

function medianScenario(id: ScenarioId, runs: readonly BenchResults[]): MedianScenario | undefined {
  const ran = runs.map((run) => run.scenarios[id]).filter((s): s is ScenarioResult => s?.status === 'ok');
  const latest = ran[ran.length - 1];
  if (!latest) return undefined;
  const rowNames = distinct([...Object.keys(latest.rows), ...ran.flatMap((s) => Object.keys(s.rows))]);
  const rows: Record<string, Record<string, number>> = {};
  for (const name of rowNames) {
    rows[name] = {};
    for (const metric of latest.metrics)
      rows[name][metric.key] = median(ran.map((s) => s.rows[name]?.[metric.key] ?? NaN));
  }
  return {
    ...latest,
    rows,
    runs: ran.length,
    notes: [
      `Each figure: the median of the ${ran.length} run(s) in which the scenario ran; within a run, as below.`,
      ...latest.notes,
    ],
  };
}

/**
 * The targets of every run (checked again from each run's own figures, with the current definitions) and
 * the median over the runs of every figure.
 */
export function summarize(runs: readonly BenchRun[], generatedAt = new Date()): BenchSummary {
  const ordered = [...runs].sort((a, b) => a.results.meta.startedAt.localeCompare(b.results.meta.startedAt));
  const results = ordered.map((run) => run.results);
  const ids = distinct(results.flatMap((r) => Object.keys(r.scenarios))) as ScenarioId[];
  const number = (id: ScenarioId) => results.find((r) => r.scenarios[id])?.scenarios[id]?.number ?? 0;
  const scenarios: Partial<Record<ScenarioId, MedianScenario>> = {};
  for (const id of [...ids].sort((a, b) => number(a) - number(b))) {
    const scenario = medianScenario(id, results);
    if (scenario) scenarios[id] = scenario;
  }
  return {
    generatedAt: generatedAt.toISOString(),
    runs: ordered.map(({ file, results: { meta } }, i) => ({
      file,
      startedAt: meta.startedAt,
      durationSec: meta.durationSec,
      scale: meta.scale,
      loadAverage: meta.loadAverage,
      machine: machineOf(results[i]),
    })),
    machines: distinct(results.map(machineOf)),
    scales: distinct(results.map((r) => r.meta.scale)),
    targets: acrossRuns(results.map((r) => checkTargets(r.scenarios))),
    scenarios,
  };
}

/** `k of N runs`, with the runs where it could not be measured. */
export function heldText(held: { met: number; na: number }, runs: number): string {
  if (held.na === runs) return runs === 1 ? 'n/a' : `n/a in all ${runs} runs`;
  const base = `${held.met} of ${runs} run${runs === 1 ? '' : 's'}`;
  return held.na > 0 ? `${base} (n/a in ${held.na})` : base;
}

/** `YYYY-MM-DD` of the first run, `… – YYYY-MM-DD` of the last when they differ. */
export function dateRange(summary: BenchSummary): string {
  const days = summary.runs.map((run) => run.startedAt.slice(0, 10));
  if (days.length === 0) return 'no runs';
  const first = days[0];
  const last = days[days.length - 1];
  return first === last ? first : `${first} – ${last}`;
}

/** A target's median with its range over the runs: `1.02× (0.98×–1.06×)`. */
export function medianText(target: TargetAcrossRuns): string {
  if (target.median === null) return 'n/a';
  const median = formatTargetValue(target.id, target.median);
  const min = formatTargetValue(target.id, target.min);
  const max = formatTargetValue(target.id, target.max);
  return min === max ? median : `${median} (${min} – ${max})`;
}

function checkCell(check: TargetCheck | undefined): string {
  if (!check || check.met === null) return 'n/a';
  const value = formatTargetValue(check.id, check.value);
  return check.met ? value : `**${value}** ✗`;
}

/** bench/results/summary.md: the runs, every target in every run, then the median figures. */
export function summaryMarkdown(summary: BenchSummary): string {
  const n = summary.runs.length;
  const lines = [
    `# nestjs-redlock benchmark: ${n} run${n === 1 ? '' : 's'}`,
    '',
    `${dateRange(summary)} · scale ${summary.scales.map((s) => `\`${s}\``).join(', ')} · ` +
      `${summary.machines.join('; ')} · summary written ${summary.generatedAt}`,
    '',
  ];
  if (summary.machines.length > 1) lines.push('**The runs were measured on different machines.**', '');
  if (summary.scales.length > 1) lines.push('**The runs were measured at different scales.**', '');
  lines.push(
    '## Runs',
    '',
    '| run | file | started | duration | load average |',
    '| ---: | --- | --- | ---: | --- |',
  );
  summary.runs.forEach((run, i) => {
    const load = `${run.loadAverage[0].toFixed(1)} → ${run.loadAverage[1].toFixed(1)}`;
    lines.push(
      `| ${i + 1} | ${cell(run.file)} | ${run.startedAt} | ${run.durationSec.toFixed(0)} s | ${load} |`,
    );
  });
  const runColumns = summary.runs.map((_, i) => `run ${i + 1}`);
  lines.push(
    '',
    '## Targets',
    '',
    "Each checked against figures of the same run; a missed target's figure is in bold. n/a: the figures it " +
      'needs are not in that run (scenario skipped, or not in its scale).',
    '',
    `| # | target | ${runColumns.join(' | ')} | median | met in |`,
    `| ---: | --- | ${runColumns.map(() => '---:').join(' | ')} | ---: | --- |`,
  );
  for (const target of summary.targets) {
    lines.push(
      `| ${target.scenario} | ${cell(target.target)} | ${target.checks.map((c) => cell(checkCell(c))).join(' | ')} | ` +
        `${cell(target.median === null ? 'n/a' : formatTargetValue(target.id, target.median))} | ${heldText(target, n)} |`,
    );
  }
  lines.push('', '## Figures: median over the runs', '');
  for (const scenario of Object.values(summary.scenarios))
    if (scenario) lines.push(...scenarioTable(scenario));
  return lines.join('\n');
}

/** Reads run JSON files: each path a file, or a directory whose `*.json` files are read (numeric names in order). */
export function loadRuns(paths: readonly string[]): BenchRun[] {
  const files = paths.flatMap((p) =>
    fs.statSync(p).isDirectory()
      ? fs
          .readdirSync(p)
          .filter((name) => name.endsWith('.json'))
          .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
          .map((name) => path.join(p, name))
      : [p],
  );
  return files.map((file) => {
    const results = JSON.parse(fs.readFileSync(file, 'utf8')) as BenchResults;
    if (!results?.meta?.startedAt || typeof results.scenarios !== 'object')
      throw new Error(`${file}: not the JSON of a benchmark run (no meta.startedAt / scenarios)`);
    const relative = path.relative(process.cwd(), file);
    return { file: relative.startsWith('..') ? path.resolve(file) : relative, results };
  });
}
