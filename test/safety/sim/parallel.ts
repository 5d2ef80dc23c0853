import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { WorkerBuild, buildWorker } from './build-worker';
import { RunOptions, RunSummary, runSchedules } from './runner';

/** Options of a parallel run (every thread claims from one counter, so `claim` is not an option here). */
export type ParallelOptions = Omit<RunOptions, 'claim' | 'onResult'>;

/** What a pooled worker thread is asked to run. */
export interface WorkerTask {
  readonly id: number;
  readonly options: ParallelOptions;
  /** One Int32: the index of the next unclaimed schedule, shared by every thread of the run. */
  readonly next: SharedArrayBuffer;
}

export type WorkerReply =
  { readonly id: number; readonly summary: RunSummary } | { readonly id: number; readonly error: string };

/** A claim function over the shared counter: each index is handed out exactly once across threads. */
export function sharedClaim(next: SharedArrayBuffer, count: number): () => number | undefined {
  const counter = new Int32Array(next);
  return () => {
    const index = Atomics.add(counter, 0, 1);
    return index < count ? index : undefined;
  };
}

/**
 * Runs schedules on every core: this thread plus `threads − 1` pooled worker threads, each claiming schedule
 * indexes from one shared counter, so the work balances itself — or, with `inThisThread` false, `threads`
 * workers while this thread only waits (under Jest: its module sandbox makes every global lookup, `Math.imul`
 * and `Promise` among them, so slow that a schedule costs about 1.5 times the CPU it costs in a worker).
 * Which thread runs a schedule never matters: each is a function of its seed. Start it once, run several
 * profiles, close it.
 */
export class SimPool {
  private tasks = 0;
  /** The shared counter of the run in progress (for progress lines). */
  private counter: Int32Array | undefined;
  private readonly waiting = new Map<number, { resolve(s: RunSummary): void; reject(e: Error): void }>();

  private constructor(
    private readonly workers: Worker[],
    private readonly build: WorkerBuild | undefined,
    private readonly inThisThread: boolean,
  ) {
    for (const worker of workers) {
      worker.on('message', (reply: WorkerReply) => this.settle(reply));
      worker.on('error', (error) => this.failAll(error));
      worker.on('exit', (code) => {
        if (this.waiting.size > 0) this.failAll(new Error(`simulation worker exited with code ${code}`));
      });
    }
  }

  static start(threads = availableParallelism(), inThisThread = true): SimPool {
    const count = inThisThread ? threads - 1 : Math.max(1, threads);
    if (count <= 0) return new SimPool([], undefined, true);
    const build = buildWorker();
    return new SimPool(
      Array.from({ length: count }, () => new Worker(build.entry)),
      build,
      inThisThread,
    );
  }

  async run(options: ParallelOptions): Promise<RunSummary> {
    const next = new SharedArrayBuffer(4);
    this.counter = new Int32Array(next);
    const began = performance.now();
    const cpu = process.cpuUsage();
    const remote = this.workers.map((worker) => {
      const id = ++this.tasks;
      const task: WorkerTask = { id, options, next };
      const done = new Promise<RunSummary>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
      worker.postMessage(task);
      return done;
    });
    const own = this.inThisThread
      ? [runSchedules({ ...options, claim: sharedClaim(next, options.count) })]
      : [];
    const summaries = await Promise.all([...own, ...remote]);
    const total = summaries.reduce(merge);
    total.elapsedMs = performance.now() - began;
    const used = process.cpuUsage(cpu); // the whole process: every thread
    total.cpuMs = (used.user + used.system) / 1000;
    total.failures.sort((a, b) => a.seed - b.seed);
    total.failures.splice(options.keepFailures ?? 5);
    total.uncoveredExamples.sort((a, b) => a.seed - b.seed);
    total.uncoveredExamples.splice(options.keepFailures ?? 5);
    return total;
  }

  /** How many schedules of the latest run have been handed out so far (done or running; may pass its count). */
  claimed(): number {
    return this.counter ? Atomics.load(this.counter, 0) : 0;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.terminate()));
    this.build?.dispose();
  }

  private settle(reply: WorkerReply): void {
    const waiter = this.waiting.get(reply.id);
    if (!waiter) return;
    this.waiting.delete(reply.id);
    if ('summary' in reply) waiter.resolve(reply.summary);
    else waiter.reject(new Error(`simulation worker failed: ${reply.error}`));
  }

  private failAll(error: Error): void {
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}

/** One parallel run on a pool of its own. */
export async function runParallel(
  options: ParallelOptions & { readonly threads?: number },
): Promise<RunSummary> {
  const { threads, ...rest } = options;
  const pool = SimPool.start(threads);
  try {
    return await pool.run(rest);
  } finally {
    await pool.close();
  }
}

function merge(into: RunSummary, from: RunSummary): RunSummary {
  const sum = {
    ...into,
    failures: [...into.failures, ...from.failures],
    uncoveredExamples: [...into.uncoveredExamples, ...from.uncoveredExamples],
  };
  for (const key of SUMMED) sum[key] += from[key];
  for (const key of MAXED) sum[key] = Math.max(sum[key], from[key]);
  return sum;
}

const SUMMED = [
  'schedules',
  'refusedUptime',
  'refusedDataAge',
  'reordered',
  'shortExtendFailed',
  'readsGranted',
  'permitsGranted',
  'events',
  'operations',
  'granted',
  'busy',
  'unavailable',
  'lost',
  'aborted',
  'extended',
  'messages',
  'lostMessages',
  'faults',
  'clockSteps',
  'stepsSeen',
  'overlaps',
  'staleTokens',
  'uncoveredOverlaps',
  'uncoveredSchedules',
  'staleWrites',
  'staleWritesAccepted',
  'writesRejected',
  'anomalies',
  'failedSchedules',
  'fairSchedules',
  'fairOps',
  'fairGranted',
  'turnSplits',
  'calls',
  'overtaken',
  'bypassSchedules',
  'idleSchedules',
  'badEnds',
  'fairViolations',
] as const;

const MAXED = ['maxBypass', 'rawMaxBypass', 'longestIdleShare', 'longestIdle'] as const;
