import * as path from 'node:path';
import { DEFAULT_OUT_DIR, REPO_DOCS, argFlag, argValue, reportSummary, runFiles } from './multi-run';
import { loadRuns, summarize } from './report/summary';
import { writeSummary } from './report/write';

/**
 * `npm run bench:summary [-- files or directories…] [--out DIR] [--no-docs]`: the summary of runs already
 * done, without running anything. Default input: results/runs/<n>.json (as `npm run bench -- --runs N`
 * keeps them); a directory given reads every *.json in it, so separate runs' latest.json copies work too.
 * Writes summary.{md,json} into --out (default results/, or BENCH_OUT) and, when every run is full-scale,
 * the benchmark tables of README.md and docs/BENCHMARKS.md.
 */
function main(): number {
  const argv = process.argv.slice(2);
  const outDir = argValue(argv, 'out') ?? (process.env.BENCH_OUT || DEFAULT_OUT_DIR);
  const unknown = argv.filter((arg) => arg.startsWith('--') && !/^--out(=.*)?$|^--no-docs$/.test(arg));
  if (unknown.length > 0) {
    process.stderr.write(
      `bench:summary: unknown option(s) ${unknown.join(' ')}; known: --out DIR, --no-docs\n`,
    );
    return 1;
  }
  const inputs = argv.filter((arg, i) => !arg.startsWith('--') && argv[i - 1] !== '--out');
  const files = inputs.length > 0 ? inputs : runFiles(path.join(outDir, 'runs'));
  if (files.length === 0) {
    process.stderr.write(
      `bench:summary: no runs in ${path.join(outDir, 'runs')} (npm run bench -- --runs N)\n`,
    );
    return 1;
  }
  const runs = loadRuns(files);
  process.stderr.write(`bench:summary: ${runs.length} run(s)\n`);
  reportSummary(writeSummary(summarize(runs), outDir, argFlag(argv, 'no-docs') ? false : REPO_DOCS));
  return 0;
}

if (require.main === module) process.exit(main());
