import * as fs from 'node:fs';
import * as path from 'node:path';
import { toSvg } from './chart';
import { DocFiles, updateDocs } from './docs';
import { toMarkdown } from './markdown';
import { BenchSummary, summaryMarkdown } from './summary';
import type { BenchResults } from './types';

export interface WrittenFiles {
  readonly json: string;
  readonly markdown: string;
  readonly chart: string;
}

/** Writes latest.json, latest.md and chart.svg into `dir` (created if needed). */
export function writeResults(results: BenchResults, dir: string): WrittenFiles {
  fs.mkdirSync(dir, { recursive: true });
  const files: WrittenFiles = {
    json: path.join(dir, 'latest.json'),
    markdown: path.join(dir, 'latest.md'),
    chart: path.join(dir, 'chart.svg'),
  };
  fs.writeFileSync(files.json, JSON.stringify(results, jsonNumbers, 2) + '\n');
  fs.writeFileSync(files.chart, toSvg(results));
  fs.writeFileSync(files.markdown, toMarkdown(results, path.basename(files.chart)));
  return files;
}

/**
 * One run's results as the multi-run summary reads them back: unrounded (its targets are checked again from
 * these figures and must come out as the run printed them), NaN/Infinity as null.
 */
export function writeRun(results: BenchResults, file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const finite = (_key: string, value: unknown) =>
    typeof value === 'number' && !Number.isFinite(value) ? null : value;
  fs.writeFileSync(file, JSON.stringify(results, finite, 2) + '\n');
}

export interface SummaryFiles {
  readonly markdown: string;
  readonly json: string;
  /** README.md and docs/BENCHMARKS.md when their tables were rewritten. */
  readonly docs: readonly string[];
  /** Why the docs were left alone. */
  readonly docsSkipped?: string;
}

/**
 * Writes summary.md and summary.json into `dir`, and rewrites the tables of `docs` — only from full-scale
 * runs: smoke figures must not reach the README.
 */
export function writeSummary(summary: BenchSummary, dir: string, docs: DocFiles | false): SummaryFiles {
  fs.mkdirSync(dir, { recursive: true });
  const markdown = path.join(dir, 'summary.md');
  const json = path.join(dir, 'summary.json');
  fs.writeFileSync(json, JSON.stringify(summary, jsonNumbers, 2) + '\n');
  fs.writeFileSync(markdown, summaryMarkdown(summary));
  let docsSkipped: string | undefined;
  if (docs === false) docsSkipped = 'not asked to';
  else if (summary.runs.length === 0) docsSkipped = 'no runs';
  else if (summary.scales.some((scale) => scale !== 'full'))
    docsSkipped = `runs at scale ${summary.scales.join(', ')}, not all full`;
  const written = docs === false || docsSkipped ? [] : updateDocs(summary, docs, markdown);
  return { markdown, json, docs: written, docsSkipped };
}

/** JSON has no NaN/Infinity: write them as null; round figures to 4 significant digits. */
function jsonNumbers(_key: string, value: unknown): unknown {
  if (typeof value !== 'number') return value;
  if (!Number.isFinite(value)) return null;
  return Number.isInteger(value) ? value : Number(value.toPrecision(4));
}
