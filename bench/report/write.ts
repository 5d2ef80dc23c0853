import * as fs from 'node:fs';
import * as path from 'node:path';
import { toSvg } from './chart';
import { toMarkdown } from './markdown';
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

/** JSON has no NaN/Infinity: write them as null; round figures to 4 significant digits. */
function jsonNumbers(_key: string, value: unknown): unknown {
  if (typeof value !== 'number') return value;
  if (!Number.isFinite(value)) return null;
  return Number.isInteger(value) ? value : Number(value.toPrecision(4));
}
