import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Metric, ScenarioId } from '../scenarios';
import { formatValue } from './format';
import { cell } from './markdown';
import { BenchSummary, MedianScenario, TargetAcrossRuns, dateRange, heldText, medianText } from './summary';

/** The generated tables of README.md and docs/BENCHMARKS.md sit between these lines. */
export const TABLE_START = '<!-- bench:table:start -->';
export const TABLE_END = '<!-- bench:table:end -->';

/** `text` with what lies between the markers replaced by `block`; everything else byte for byte. */
export function replaceTable(text: string, block: string, file: string): string {
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < 0 || end < start)
    throw new Error(`${file}: no ${TABLE_START} … ${TABLE_END} markers to write the benchmark table between`);
  if (text.indexOf(TABLE_START, start + 1) >= 0 || text.indexOf(TABLE_END, end + 1) >= 0)
    throw new Error(`${file}: the benchmark table markers appear more than once`);
  return `${text.slice(0, start + TABLE_START.length)}\n\n${block.trim()}\n\n${text.slice(end)}`;
}

/** Per run, whether every one of `ids` held (null when one of them was not measured): `k of N runs`. */
function heldAll(summary: BenchSummary, ids: readonly string[]): string {
  const targets = ids
    .map((id) => summary.targets.find((t) => t.id === id))
    .filter((t): t is TargetAcrossRuns => t !== undefined);
  let met = 0;
  let na = 0;
  summary.runs.forEach((_, run) => {
    const checks = targets.map((t) => t.checks[run]);
    if (checks.length === 0 || checks.some((c) => c.met === null)) na++;
    else if (checks.every((c) => c.met === true)) met++;
  });
  return heldText({ met, na }, summary.runs.length);
}

function runsLine(summary: BenchSummary): string {
  const n = summary.runs.length;
  return (
    `${n} ${summary.scales.join('/')} run${n === 1 ? '' : 's'}, ${dateRange(summary)}, on ` +
    `${summary.machines.join('; ')}`
  );
}

function heldEverywhere(summary: BenchSummary): string {
  const measured = summary.targets.filter((t) => t.na < summary.runs.length);
  const always = measured.filter((t) => t.met === summary.runs.length).length;
  const never = summary.targets.length - measured.length;
  return (
    `Targets held in every run: ${always} of ${measured.length}` +
    (never > 0 ? ` (${never} more not measured in any run)` : '')
  );
}

const link = (from: string, to: string): string =>
  path.relative(path.dirname(from), to).split(path.sep).join('/');

interface FigureRow {
  readonly scenario: ScenarioId;
  /** The metric keys to show, from the scenario's metrics (several for per-count figures). */
  readonly keys: (metrics: readonly Metric[]) => string[];
}

const key =
  (...names: string[]) =>
  (metrics: readonly Metric[]): string[] =>
    names.filter((name) => metrics.some((m) => m.key === name));

/** Keys `${prefix}${count}` of the largest count (scenario 5's node counts, scenario 8's held counts). */
const largest =
  (prefix: string) =>
  (metrics: readonly Metric[]): string[] => {
    const counts = metrics
      .map((m) => new RegExp(`^${prefix}(\\d+)$`).exec(m.key))
      .filter((match): match is RegExpExecArray => match !== null)
      .map((match) => Number(match[1]));
    return counts.length > 0 ? [`${prefix}${Math.max(...counts)}`] : [];
  };

const FIGURES: readonly FigureRow[] = [
  { scenario: 'uncontended', keys: key('cycleP50', 'cycleP99', 'cpuPerCycle') },
  { scenario: 'throughput', keys: key('opsPerSec', 'clientCpuPerCycle', 'redisCpuPerCycle') },
  { scenario: 'contention', keys: key('ownerChangesPerSec', 'waitP99', 'gaveUp') },
  { scenario: 'slowNode', keys: key('acquireP50', 'vsFast') },
  { scenario: 'scale', keys: (m) => [...key('p50n1')(m), ...largest('p50n')(m), ...key('growth')(m)] },
  { scenario: 'memory', keys: key('holdCpuPct', 'heldRssMB', 'afterReleaseMB', 'growthMB') },
  {
    scenario: 'heldScale',
    keys: (m) => ['cpuPct', 'cpuUs', 'redisUs', 'heapKB', 'rssKB'].flatMap((prefix) => largest(prefix)(m)),
  },
  { scenario: 'fairness', keys: key('grantsPerSec', 'jain', 'waitMaxOverP50', 'bypassMax') },
];

/** Median figures, one row per figure, one column per implementation. */
function figuresTable(summary: BenchSummary): string[] {
  const shown = FIGURES.map((row) => ({ row, scenario: summary.scenarios[row.scenario] })).filter(
    (entry): entry is { row: FigureRow; scenario: MedianScenario } => entry.scenario !== undefined,
  );
  const names = [...new Set(shown.flatMap(({ scenario }) => Object.keys(scenario.rows)))];
  const lines = [
    `| figure (median of the runs) | ${names.map(cell).join(' | ')} |`,
    `| --- | ${names.map(() => '---:').join(' | ')} |`,
  ];
  for (const { row, scenario } of shown) {
    for (const metricKey of row.keys(scenario.metrics)) {
      const metric = scenario.metrics.find((m) => m.key === metricKey)!;
      const cells = names.map((name) => {
        const figures = scenario.rows[name];
        return figures ? formatValue(figures[metricKey], metric.unit) : '—';
      });
      lines.push(`| ${scenario.number}. ${cell(metric.label)} | ${cells.map(cell).join(' | ')} |`);
    }
  }
  return lines;
}

/** The generated part of docs/BENCHMARKS.md: figures by implementation, then every target. */
export function benchmarksTable(summary: BenchSummary, file: string, summaryFile: string): string {
  const lines = [
    `<!-- Written by \`npm run bench:summary\`; edits between the bench:table markers are overwritten. -->`,
    '',
    `${runsLine(summary)}. Each figure is the median over the runs of each run's figure (itself the median ` +
      `of its rounds); "held in" counts the runs in which a target held, each checked against figures of ` +
      `its own run. Every run's figures: [${link(file, summaryFile)}](${link(file, summaryFile)}).`,
    '',
    ...figuresTable(summary),
    '',
    '| # | target | median (range over the runs) | held in |',
    '| ---: | --- | --- | --- |',
    ...summary.targets.map(
      (t) =>
        `| ${t.scenario} | ${cell(t.target)} | ${cell(medianText(t))} | ${heldText(t, summary.runs.length)} |`,
    ),
    '',
    `${heldEverywhere(summary)}.`,
  ];
  return lines.join('\n');
}

interface ShortRow {
  readonly label: string;
  readonly scenario: ScenarioId;
  readonly metric: string;
  readonly target: string;
  /** The targets the row's "held in" counts: a run counts when all of them held. */
  readonly targets: readonly string[];
}

const SHORT: readonly ShortRow[] = [
  {
    label: '1. sequential acquire + release, p50',
    scenario: 'uncontended',
    metric: 'cycleP50',
    target: '≤ 1.05 × every peer',
    targets: ['s1-p50-vs-node-redlock', 's1-p50-vs-sesamecare-redlock', 's1-p50-vs-redlock-universal'],
  },
  {
    label: '2. throughput, concurrent workers on distinct keys',
    scenario: 'throughput',
    metric: 'opsPerSec',
    target: '≥ 1.5 × node-redlock',
    targets: ['s2-throughput-vs-node-redlock'],
  },
  {
    label: '3. contention on one key: owner changes/s',
    scenario: 'contention',
    metric: 'ownerChangesPerSec',
    target: '≥ 20 × node-redlock',
    targets: ['s3-owner-changes-vs-node-redlock'],
  },
  {
    label: '3. contention on one key: wait p99',
    scenario: 'contention',
    metric: 'waitP99',
    target: '≤ 0.2 × node-redlock',
    targets: ['s3-wait-p99-vs-node-redlock'],
  },
  {
    label: '7. 10,000 held, auto-extended locks: client CPU',
    scenario: 'memory',
    metric: 'holdCpuPct',
    target: '≤ 5 % of a core',
    targets: ['s7-held-cpu'],
  },
];

/** The generated part of README.md: a few headline figures against node-redlock. */
export function readmeTable(summary: BenchSummary, file: string, benchmarksFile: string): string {
  const figure = (row: ShortRow, name: string): string => {
    const scenario = summary.scenarios[row.scenario];
    const metric = scenario?.metrics.find((m) => m.key === row.metric);
    const value = scenario?.rows[name]?.[row.metric];
    return metric && value !== undefined ? formatValue(value, metric.unit) : '—';
  };
  const lines = [
    `<!-- Written by \`npm run bench:summary\`; edits between the bench:table markers are overwritten. -->`,
    '',
    '| figure (median of the runs) | nestjs-redlock | node-redlock | target | held in |',
    '| --- | ---: | ---: | --- | --- |',
    ...SHORT.map(
      (row) =>
        `| ${row.label} | ${figure(row, 'nestjs-redlock')} | ${figure(row, 'node-redlock')} | ${row.target} | ` +
        `${heldAll(summary, row.targets)} |`,
    ),
    '',
    `${runsLine(summary)}. ${heldEverywhere(summary)}. The other peers, the raw floors and every target: ` +
      `[${link(file, benchmarksFile)}](${link(file, benchmarksFile)}).`,
  ];
  return lines.join('\n');
}

export interface DocFiles {
  readonly readme: string;
  readonly benchmarks: string;
}

/** Rewrites the tables of README.md and docs/BENCHMARKS.md; returns the files written. */
export function updateDocs(summary: BenchSummary, files: DocFiles, summaryFile: string): string[] {
  const blocks: [string, string][] = [
    [files.benchmarks, benchmarksTable(summary, files.benchmarks, summaryFile)],
    [files.readme, readmeTable(summary, files.readme, files.benchmarks)],
  ];
  // Both checked before either is written: a file without markers leaves both as they were.
  const updated = blocks.map(([file, block]) => [
    file,
    replaceTable(fs.readFileSync(file, 'utf8'), block, file),
  ]);
  for (const [file, text] of updated) fs.writeFileSync(file, text);
  return updated.map(([file]) => file);
}
