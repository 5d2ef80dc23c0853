/**
 * What the parent (processes.ts) and each child (worker.ts) of the fairness scenario share: the job, the lines
 * they exchange, the clock and the records. Nothing here loads the TypeScript compiler (the child imports it).
 */

/** One child process's part: `workers` loops on `resource` through the implementation `impl`. */
export interface FairnessJob {
  /** An implementation of bench/adapters, or {@link NO_EXCLUSION} (the negative control). */
  readonly impl: string;
  readonly urls: readonly string[];
  readonly resource: string;
  /** This process's number (0-based): its workers are numbered `process * workers + w`. */
  readonly process: number;
  readonly workers: number;
  readonly holdMs: number;
  readonly ttl: number;
  /** nestjs-redlock's wait budget. */
  readonly waitBudgetMs: number;
  /** The retry count of node-redlock (retryCount) and redlock-universal (retryAttempts). */
  readonly retries: number;
}

/**
 * A pseudo-implementation that excludes nobody: acquire() resolves at once. It exists so the overlap and
 * bypass checks can be shown to find what they look for, through the same processes and clock (the smoke test).
 */
export const NO_EXCLUSION = 'control: no exclusion';

/** The child is connected and waits for the start line. */
export const READY_MARKER = '@@bench-fairness-ready';
/** The parent's start line to each child: `go <startAt> <endAt>` on the shared clock. */
export const GO_PREFIX = 'go ';
/** Prefix of the child's result line: its attempts as JSON ({@link ChildResult}). */
export const RESULT_MARKER = '@@bench-fairness-result ';
/** Prefix of the line a child writes when it failed: the error's message. */
export const ERROR_MARKER = '@@bench-fairness-error ';

/**
 * The one clock every process of the scenario reads: process.hrtime is libuv's uv_hrtime, the system's
 * monotonic clock (CLOCK_MONOTONIC on Linux, mach_absolute_time on macOS, QueryPerformanceCounter on Windows),
 * the same for every process on the machine, so timestamps of different processes compare directly. In ms,
 * to the µs.
 */
export function sharedClock(): number {
  return Math.round(Number(process.hrtime.bigint() / 1000n)) / 1000;
}

/**
 * One call of acquire by one worker, on the shared clock: `[worker, start, end, heldUntil]`. `end` is when the
 * lock was granted or the call gave up; `heldUntil` is when the worker's hold ended (just before it called
 * release), or -1 when the call gave up.
 */
export type Attempt = readonly [worker: number, start: number, end: number, heldUntil: number];

export interface ChildResult {
  readonly attempts: readonly Attempt[];
  /** How late the child began after the start time given (ms; 0 when on time). */
  readonly lateMs: number;
}
