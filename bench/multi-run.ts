import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { DocFiles } from './report/docs';
import { loadRuns, summarize } from './report/summary';
import { SummaryFiles, writeSummary } from './report/write';
import { sleep } from './timing';

const REPO = path.resolve(__dirname, '..');

/** Where results go unless BENCH_OUT says otherwise. */
export const DEFAULT_OUT_DIR = path.join(__dirname, 'results');

/** README.md and docs/BENCHMARKS.md of this repository. */
export const REPO_DOCS: DocFiles = {
  readme: path.join(REPO, 'README.md'),
  benchmarks: path.join(REPO, 'docs', 'BENCHMARKS.md'),
};

/** The run files of a runs directory: `<n>.json`, by n. */
export function runFiles(runsDir: string): string[] {
  if (!fs.existsSync(runsDir)) return [];
  return fs
    .readdirSync(runsDir)
    .filter((name) => /^\d+\.json$/.test(name))
    .sort((a, b) => parseInt(a, 10) - parseInt(b, 10))
    .map((name) => path.join(runsDir, name));
}

export interface MultiRunOptions {
  readonly runs: number;
  /** latest.* of the last run, summary.{md,json}, and runs/<n>.json go here. */
  readonly outDir: string;
  /** Delete the runs already in runs/ first (otherwise the new runs are numbered after them). */
  readonly fresh: boolean;
  /** Idle time before each run after the first, so the machine settles. */
  readonly pauseMs: number;
  /** Where to rewrite the benchmark tables (full-scale runs only); false: leave them. */
  readonly docs: DocFiles | false;
  readonly log: (message: string) => void;
  /** Runs the benchmark once, writing its JSON to `file`; resolves the exit code. Default: a child process. */
  readonly runOne?: (file: string, outDir: string) => Promise<number>;
}

/** One benchmark run in a child process of its own (a fresh heap and fresh nodes), writing its JSON to `file`. */
function runChild(file: string, outDir: string): Promise<number> {
  const child = spawn(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'run.ts')],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, BENCH_RUNS: '', BENCH_RUN_FILE: file, BENCH_OUT: outDir },
    },
  );
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

/**
 * Runs the whole benchmark `runs` times, one after another, each in its own process; keeps each run's JSON as
 * runs/<n>.json, then summarizes every run in runs/ (the new ones and any kept from before).
 */
export async function runMany(
  options: MultiRunOptions,
): Promise<{ files: string[]; failed: number; summary: SummaryFiles }> {
  const { runs, outDir, pauseMs, log } = options;
  const runsDir = path.join(outDir, 'runs');
  fs.mkdirSync(runsDir, { recursive: true });
  if (options.fresh) for (const file of runFiles(runsDir)) fs.unlinkSync(file);
  const kept = runFiles(runsDir);
  const first = kept.length > 0 ? parseInt(path.basename(kept[kept.length - 1]), 10) + 1 : 1;
  const files: string[] = [];
  let failed = 0;
  for (let i = 0; i < runs; i++) {
    if (i > 0 && pauseMs > 0) {
      log(`bench: idle ${(pauseMs / 1000).toFixed(0)} s before the next run`);
      await sleep(pauseMs);
    }
    const file = path.join(runsDir, `${first + i}.json`);
    log(`bench: run ${i + 1} of ${runs} → ${file} (load average ${os.loadavg()[0].toFixed(2)})`);
    const code = await (options.runOne ?? runChild)(file, outDir);
    if (code === 0 && fs.existsSync(file)) files.push(file);
    else {
      failed++;
      log(`bench: run ${i + 1} failed (exit ${code}); the summary leaves it out`);
    }
  }
  const all = runFiles(runsDir);
  log(`bench: summary of ${all.length} run(s) in ${runsDir} (${files.length} new)`);
  const summary = writeSummary(summarize(loadRuns(all)), outDir, options.docs);
  return { files, failed, summary };
}

/** `--name value` or `--name=value` from argv. */
export function argValue(argv: readonly string[], name: string): string | undefined {
  const index = argv.indexOf(`--${name}`);
  if (index >= 0) return argv[index + 1];
  return argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
}

export function argFlag(argv: readonly string[], name: string): boolean {
  return argv.includes(`--${name}`);
}

/** Prints where the summary went and whether the docs were rewritten. */
export function reportSummary(files: SummaryFiles, out: NodeJS.WritableStream = process.stdout): void {
  out.write(`\nWrote ${files.markdown}\n      ${files.json}\n`);
  for (const doc of files.docs) out.write(`      ${doc} (benchmark table)\n`);
  if (files.docsSkipped) out.write(`README.md and docs/BENCHMARKS.md left alone: ${files.docsSkipped}\n`);
}
