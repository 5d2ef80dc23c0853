import type { ScaleProfile } from '../../config';
import type { BenchContext, Metric, Scenario, ScenarioResult } from '../types';
import { fairnessFigures } from './figures';
import { runProcesses } from './processes';
import type { FairnessJob } from './protocol';

export { NO_EXCLUSION } from './protocol';

const TITLE = 'Contention across processes: fairness of waiting';

/**
 * The implementations compared (the issue "fair waiting"): ours, ours with fair waiting, and the two peers with
 * a distributed lock.
 */
export const FAIRNESS_IMPLS: readonly string[] = [
  'nestjs-redlock',
  'nestjs-redlock (fair)',
  'node-redlock',
  'redlock-universal',
];

/** Beyond the run itself: the children's start, and the waiters left at the end finishing their holds. */
const SLACK_MS = 60_000;

const METRICS: readonly Metric[] = [
  { key: 'grantsPerSec', label: 'grants/s', unit: '/s', better: 'higher' },
  { key: 'jain', label: "Jain's index (grants per worker)", unit: 'index', better: 'higher', ratio: false },
  { key: 'waitP50', label: 'wait p50', unit: 'ms', better: 'lower' },
  { key: 'waitP99', label: 'wait p99', unit: 'ms', better: 'lower' },
  { key: 'waitMax', label: 'longest wait', unit: 'ms', better: 'lower' },
  { key: 'waitMaxOverP50', label: 'longest ÷ median', unit: '×', better: 'lower' },
  { key: 'gaveUp', label: 'calls that gave up', unit: '', better: 'lower' },
  { key: 'starved', label: 'workers never granted', unit: '', better: 'lower' },
  { key: 'bypassP99', label: 'bypasses p99', unit: '', better: 'lower' },
  { key: 'bypassMax', label: 'bypasses max', unit: '', better: 'lower' },
  { key: 'handoverP50', label: 'hand-over p50', unit: 'ms', better: 'lower' },
  { key: 'handoverP99', label: 'hand-over p99', unit: 'ms', better: 'lower' },
  {
    key: 'sameProcessShare',
    label: 'hand-overs within one process',
    unit: 'share',
    better: 'lower',
    ratio: false,
  },
  { key: 'overlaps', label: 'overlapping holds', unit: '', better: 'lower' },
];

/**
 * One implementation's pass: `processes` Node processes of `workers` workers each, all on one resource, for
 * `durationMs`; its row of figures.
 */
export async function measureFairness(
  impl: string,
  urls: readonly string[],
  scale: ScaleProfile,
  log: (message: string) => void,
): Promise<Record<string, number>> {
  const { processes, workers, holdMs, durationMs, waitBudgetMs, retries } = scale.fairness;
  const jobs = Array.from({ length: processes }, (_, process): FairnessJob => ({
    impl,
    urls,
    resource: `s10:${impl}`,
    process,
    workers,
    holdMs,
    ttl: scale.ttl,
    waitBudgetMs,
    retries,
  }));
  const run = await runProcesses(jobs, durationMs, log, durationMs + waitBudgetMs + SLACK_MS);
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  log(
    `   ${impl}: processes connected in ${seconds(run.readyMs)}, the last calls ended ` +
      `${seconds(run.drainMs)} after the end` +
      (run.lateMs > 50 ? `; a process began ${run.lateMs.toFixed(0)} ms late` : ''),
  );
  return fairnessFigures(run.attempts, { ...run, workers: processes * workers, workersPerProcess: workers });
}

function notes(scale: ScaleProfile, nodes: number, failures: readonly string[]): string[] {
  const { processes, workers, holdMs, durationMs, waitBudgetMs, retries } = scale.fairness;
  return [
    `${processes} Node processes × ${workers} workers, all looping on one resource over ${nodes} nodes: ` +
      `acquire, hold ≈ ${holdMs} ms (setTimeout), release, for ${durationMs / 1000} s; one pass per ` +
      'implementation, one implementation at a time, in processes started for that pass.',
    `A generous wait for each: nestjs-redlock wait = ${waitBudgetMs / 1000} s; node-redlock retryCount ` +
      `${retries} (retryDelay 200 ms ± 100 ms: ≈ ${(retries * 0.2).toFixed(0)} s); redlock-universal ` +
      `retryAttempts ${retries} (retryDelay 200 ms: ≈ ${(retries * 0.2).toFixed(0)} s). Other settings: defaults.`,
    "Jain's index: (Σx)² ÷ (n·Σx²) over the grants of each of the n workers in the window (1 = equal shares; " +
      '1/n = one worker got all). Waits: of calls granted (those that gave up are counted apart), from the call ' +
      'to the grant.',
    'Bypasses of a waiter (every call, granted or given up): the grants that went, while it waited, to calls ' +
      'that began waiting after it did; first-come, first-served gives 0. p99 and max over the waiters.',
    "Hand-over: from the previous holder's end of hold (just before its release) to the next grant; the share " +
      'of hand-overs where the next holder ran in the same process (no announcement needed to reach it).',
    'Timestamps of every process on one clock (the system monotonic clock, process.hrtime): "overlapping ' +
      "holds\" counts grants that came while another process's or worker's hold had not yet ended (must be 0).",
    ...failures,
  ];
}

/**
 * Scenario 10 (issue "fair waiting"): waiters in several processes on one lock — is the lock shared evenly,
 * does a waiter get overtaken, how long is the longest wait beside the median. Scenario 3 runs every worker in
 * one process, where waiting is ordered by one event loop; here it is not.
 */
export const fairness: Scenario = {
  id: 'fairness',
  number: 10,
  title: TITLE,
  async run({ scale, urls, impls, log }: BenchContext): Promise<ScenarioResult> {
    const rows: Record<string, Record<string, number>> = {};
    const failures: string[] = [];
    const taking = impls.filter((impl) => FAIRNESS_IMPLS.includes(impl.name));
    for (const impl of taking) {
      log(`  10 fairness · ${impl.name} (${scale.fairness.processes} processes)`);
      const began = Date.now();
      try {
        rows[impl.name] = await measureFairness(impl.name, urls, scale, log);
        log(`   ${impl.name}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
      } catch (error) {
        const reason = (error as Error).message;
        log(`   ${impl.name} failed: ${reason}`);
        rows[impl.name] = {};
        failures.push(`${impl.name}: no figures — ${reason}.`);
      }
    }
    if (taking.length > 0 && failures.length === taking.length)
      throw new Error(`every implementation's processes failed; ${failures[0]}`);
    return {
      id: 'fairness',
      number: 10,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics: METRICS,
      rows,
      notes: notes(scale, urls.length, failures),
    };
  },
};
