import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as readline from 'node:readline';
import type { ImplName, Implementation } from '../adapters';
import type { ScaleProfile } from '../config';

/**
 * Scenarios 7 and 8 measure heap and RSS deltas. A process never gives back the pages it has taken (RSS does
 * not shrink after a GC), so an implementation measured after another in the same process reuses them and
 * shows a smaller RSS delta. Each implementation's pass therefore runs in a Node process of its own
 * (isolated-child.ts), started for it and gone before the next one starts.
 */

/** What one child process measures: one implementation's pass of scenario 7 or 8. */
export interface IsolatedJob {
  readonly scenario: 'memory' | 'heldScale';
  readonly impl: ImplName;
  /** The main node set. */
  readonly urls: readonly string[];
  readonly scale: ScaleProfile;
  /** Scenario 8: the held counts, in order (BENCH_HELD_COUNTS already applied by the parent). */
  readonly counts?: readonly number[];
}

/** A child entry point: plain JavaScript, with where its packages resolve from. */
export interface ChildEntry {
  readonly file: string;
  readonly nodePath: string;
}

/** Prefix of the child's one result line on stdout; its other lines are log lines. */
export const RESULT_MARKER = '@@bench-isolated-result ';
/** Prefix of the line a child writes instead when its pass failed: the error's message. */
export const ERROR_MARKER = '@@bench-isolated-error ';

/** How long a child may take: generous, a full-scale pass of scenario 8 (100,000 held) takes minutes. */
const TIMEOUT_MS: Record<ScaleProfile['name'], number> = { full: 10 * 60_000, smoke: 2 * 60_000 };

/** After its result line, a child has this long to exit by itself (clients torn down) before it is killed. */
const EXIT_GRACE_MS = 10_000;

const REPO = path.resolve(__dirname, '..', '..');

/** JSON drops NaN and ±Infinity (to null); these keep them. */
export function encodeRow(row: Record<string, number>): string {
  return JSON.stringify(row, (_key, value: unknown) =>
    typeof value === 'number' && !Number.isFinite(value) ? String(value) : value,
  );
}

function decodeRow(text: string): Record<string, number> {
  return JSON.parse(text, (_key, value: unknown) =>
    value === 'NaN' || value === 'Infinity' || value === '-Infinity' ? Number(value) : value,
  ) as Record<string, number>;
}

/**
 * isolated-child.ts and what it imports, transpiled once into a temporary folder so each child starts as
 * plain Node (ts-node in every child would cost about 2 s of CPU each, 16 times a run). Packages resolve as
 * they do for the sources: bench/node_modules first (the peers), then the repository's (the library's).
 */
let built: ChildEntry | undefined;

function buildChild(): { entry: ChildEntry; dispose(): void } {
  // Once per process (scenarios 7 and 8 and the smoke test's own runs share it); removed when the process exits.
  if (built) return { entry: built, dispose: () => undefined };
  // Loaded here, not at the top: the child imports this module and must not load the TypeScript compiler.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { transpileTree } =
    require('../../test/support/transpile-tree') as typeof import('../../test/support/transpile-tree');
  const build = transpileTree(path.join(__dirname, 'isolated-child.ts'), 'bench-child');
  const nodePath = [path.join(REPO, 'bench', 'node_modules'), build.nodePath, process.env.NODE_PATH]
    .filter((dir): dir is string => !!dir)
    .join(path.delimiter);
  process.once('exit', () => build.dispose());
  built = { file: build.entry, nodePath };
  return { entry: built, dispose: () => undefined };
}

/**
 * Runs `job` in a child process (node --expose-gc) and resolves its result row. The child's stdout and stderr
 * lines go to `log`. Rejects with the reason when the child cannot start, exits without a result, or is still
 * running after `timeoutMs` (it is then killed); a child still running `exitGraceMs` after its result is
 * killed too (and said so), its result kept.
 */
export function runInChild(
  entry: ChildEntry,
  job: IsolatedJob,
  log: (message: string) => void,
  { timeoutMs, exitGraceMs = EXIT_GRACE_MS }: { timeoutMs: number; exitGraceMs?: number },
): Promise<Record<string, number>> {
  // BENCH_CHILD_PROF=<dir>: each child writes a V8 CPU profile there (node --cpu-prof), for finding its costs.
  const profile = process.env.BENCH_CHILD_PROF
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CHILD_PROF}`]
    : [];
  const child = spawn(process.execPath, ['--expose-gc', ...profile, entry.file, JSON.stringify(job)], {
    // stdin stays open: the child exits when it closes, so it cannot outlive this process.
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, NODE_PATH: entry.nodePath },
  });
  return new Promise((resolve, reject) => {
    let result: Record<string, number> | undefined;
    // What the child said went wrong: its error line, else the last stderr line that is not a stack frame.
    let failure: string | undefined;
    let lastError: string | undefined;
    let timedOut = false;
    let grace: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith(ERROR_MARKER)) failure = line.slice(ERROR_MARKER.length);
      else if (!line.startsWith(RESULT_MARKER)) return log(line);
      else {
        result = decodeRow(line.slice(RESULT_MARKER.length));
        grace = setTimeout(() => {
          log(`   ${job.impl}: its process did not exit ${exitGraceMs / 1000} s after its result; killed`);
          child.kill('SIGKILL');
        }, exitGraceMs);
      }
    });
    readline.createInterface({ input: child.stderr! }).on('line', (line) => {
      log(line);
      if (line.trim() && !/^\s+at /.test(line)) lastError = line.trim();
    });
    const settle = (error?: Error): void => {
      clearTimeout(timer);
      clearTimeout(grace);
      child.stdin?.destroy();
      if (error) reject(error);
      else resolve(result!);
    };
    child.once('error', (error) => settle(new Error(`its process could not start: ${error.message}`)));
    child.once('close', (code, signal) => {
      if (result) return settle();
      const how = timedOut
        ? `did not finish within ${timeoutMs / 1000} s (killed)`
        : signal
          ? `was killed by ${signal}`
          : `exited with code ${code}`;
      const said = failure ?? lastError;
      settle(new Error(`its process ${how} without a result${said ? `: ${said}` : ''}`));
    });
  });
}

/**
 * Runs each implementation's pass of a scenario in a process of its own, one after another (`job` says what to
 * measure). An implementation whose process fails gets an empty row (its figures show as —, its targets n/a)
 * and a note with the reason; if every one fails, this throws (the scenario is then skipped with the reason).
 */
export async function eachInOwnProcess(
  impls: readonly Implementation[],
  job: (impl: Implementation) => IsolatedJob,
  { scale, log, label }: { scale: ScaleProfile; log: (message: string) => void; label: string },
): Promise<{ rows: Record<string, Record<string, number>>; failures: string[] }> {
  const rows: Record<string, Record<string, number>> = {};
  const failures: string[] = [];
  const child = buildChild();
  try {
    for (const impl of impls) {
      log(`  ${label} · ${impl.name} (own process)`);
      const began = Date.now();
      try {
        rows[impl.name] = await runInChild(child.entry, job(impl), log, {
          timeoutMs: TIMEOUT_MS[scale.name],
        });
        log(`   ${impl.name}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
      } catch (error) {
        const reason = (error as Error).message;
        log(`   ${impl.name} failed: ${reason}`);
        rows[impl.name] = {};
        failures.push(`${impl.name}: no figures — ${reason}.`);
      }
    }
  } finally {
    child.dispose();
  }
  if (impls.length > 0 && failures.length === impls.length)
    throw new Error(`every implementation's process failed; ${failures[0]}`);
  return { rows, failures };
}
