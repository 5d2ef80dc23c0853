/**
 * How big a run is. `full` is what `npm run bench` measures (≈ 10 minutes on 2 cores; it prints its own
 * estimate at start, bench/estimate.ts); `smoke` runs every scenario through the same code with tiny counts, so
 * the benchmark cannot rot (test/bench).
 */
export type ScaleName = 'full' | 'smoke';

export interface ScaleProfile {
  readonly name: ScaleName;
  /** Rounds per scenario; each round runs every implementation once, in a rotated order. */
  readonly rounds: number;
  /** Nodes of the main set (scenarios 1–4, 6, 7). */
  readonly nodes: number;
  /** Lock ttl given to every implementation, in ms. */
  readonly ttl: number;
  readonly uncontended: { readonly warmup: number; readonly iterations: number };
  readonly throughput: { readonly workers: number; readonly warmupMs: number; readonly durationMs: number };
  readonly contention: {
    readonly workers: number;
    readonly holdMs: number;
    readonly durationMs: number;
    /** The wait budget given to nestjs-redlock (peers keep their own default retry settings). */
    readonly waitBudgetMs: number;
  };
  readonly slowNode: {
    readonly latencyMs: number;
    readonly warmup: number;
    readonly iterations: number;
    /** Stop a block early after this long (an implementation that waits for the slow node takes 100 ms a call). */
    readonly maxBlockMs: number;
  };
  readonly scale: {
    readonly nodeCounts: readonly number[];
    /** Latency each TCP proxy adds in each direction, in ms. */
    readonly latencyMs: number;
    readonly warmup: number;
    readonly iterations: number;
  };
  readonly decorator: { readonly warmup: number; readonly iterations: number };
  /**
   * Scenario 8: counts of locks held at once, their ttl and the hold. BENCH_HELD_COUNTS overrides the counts;
   * `npm run bench -- --held-100k` adds {@link HELD_100K}.
   */
  readonly heldScale: { readonly counts: readonly number[]; readonly ttl: number; readonly holdMs: number };
  readonly memory: {
    readonly warmup: number;
    /** Cycles for nestjs-redlock (the target is about it). */
    readonly cycles: number;
    /** Cycles for the peers and the floor (fewer, to keep the run short). */
    readonly peerCycles: number;
    readonly concurrency: number;
    readonly held: number;
    /** ttl of the held locks; the nodes must first be this old (nestjs-redlock's restart guard, test/support/node-age.ts). */
    readonly heldTtl: number;
    readonly holdMs: number;
  };
  /**
   * Scenario 10: `processes` Node processes × `workers` workers on one resource, each call with a generous wait
   * (nestjs-redlock `waitBudgetMs`; node-redlock and redlock-universal `retries` retries of 200 ms or so).
   */
  readonly fairness: {
    readonly processes: number;
    readonly workers: number;
    readonly holdMs: number;
    readonly durationMs: number;
    readonly waitBudgetMs: number;
    readonly retries: number;
  };
}

const FULL: ScaleProfile = {
  name: 'full',
  rounds: 3,
  nodes: 5,
  ttl: 10_000,
  uncontended: { warmup: 300, iterations: 2_000 },
  throughput: { workers: 200, warmupMs: 500, durationMs: 5_000 },
  contention: { workers: 20, holdMs: 1, durationMs: 5_000, waitBudgetMs: 10_000 },
  slowNode: { latencyMs: 50, warmup: 20, iterations: 400, maxBlockMs: 4_000 },
  scale: { nodeCounts: [1, 3, 5, 7, 9], latencyMs: 1, warmup: 20, iterations: 200 },
  decorator: { warmup: 100, iterations: 3_000 },
  heldScale: { counts: [1_000, 10_000], ttl: 3_000, holdMs: 4_000 },
  memory: {
    warmup: 2_000,
    cycles: 100_000,
    peerCycles: 10_000,
    concurrency: 100,
    held: 10_000,
    heldTtl: 10_000,
    holdMs: 4_000,
  },
  fairness: { processes: 4, workers: 5, holdMs: 5, durationMs: 20_000, waitBudgetMs: 10_000, retries: 50 },
};

/** Scenario 8's largest count, left out by default: it alone takes longer than the rest of the run. */
export const HELD_100K = 100_000;

const SMOKE: ScaleProfile = {
  name: 'smoke',
  rounds: 1,
  nodes: 3,
  ttl: 2_000,
  uncontended: { warmup: 5, iterations: 30 },
  throughput: { workers: 10, warmupMs: 20, durationMs: 150 },
  contention: { workers: 4, holdMs: 1, durationMs: 150, waitBudgetMs: 10_000 },
  slowNode: { latencyMs: 20, warmup: 2, iterations: 10, maxBlockMs: 2_000 },
  scale: { nodeCounts: [1, 3], latencyMs: 1, warmup: 2, iterations: 10 },
  decorator: { warmup: 2, iterations: 20 },
  heldScale: { counts: [20, 50], ttl: 2_000, holdMs: 50 },
  memory: {
    warmup: 20,
    cycles: 300,
    peerCycles: 100,
    concurrency: 10,
    held: 100,
    heldTtl: 2_000,
    holdMs: 50,
  },
  fairness: { processes: 2, workers: 2, holdMs: 5, durationMs: 1_000, waitBudgetMs: 10_000, retries: 50 },
};

/** `BENCH_SCALE=smoke` → tiny counts; anything else (or unset) → full. */
export function scaleFromEnv(value = process.env.BENCH_SCALE): ScaleProfile {
  return value === 'smoke' ? SMOKE : FULL;
}

export function scaleProfile(name: ScaleName): ScaleProfile {
  return name === 'smoke' ? SMOKE : FULL;
}
