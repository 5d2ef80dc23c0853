import { BASELINE, type Implementation, runsIn } from './adapters';
import { HELD_100K, type ScaleProfile } from './config';
import { SCENARIOS, ScenarioId } from './scenarios';
import { FAIRNESS_IMPLS } from './scenarios/fairness';

/**
 * How long a run takes, from its configuration (rounds, iterations, durations, holds, counts), printed before
 * it starts. Time-bound parts (throughput, contention, holds) are exact; count-bound parts use the costs below,
 * measured on a 2-core machine with 5 local nodes (the runs in bench/results/runs: each scenario's formula
 * lands within 10 % of its measured seconds). Elsewhere, read it as an order of magnitude.
 */
const COST = {
  /** One sequential acquire + release on local nodes (scenarios 1, 4, 6). */
  sequentialCycleMs: 0.24,
  /** One cycle behind the fan-out proxies: two round trips through them, plus a little per node (scenario 5). */
  proxiedCycleMs: (latencyMs: number, nodes: number) => 4 * (latencyMs + 0.15) + 0.12 * (nodes - 1),
  /** Per cycle of many concurrent ones, and per lock taken and released while held (scenarios 7 and 8). */
  concurrentCycleMs: 0.1,
  /** Starting one implementation's own process (scenarios 7 and 8), and the settling around each held count. */
  childMs: 300,
  heldCountMs: 200,
  /**
   * Scenario 8 at 100,000 held locks (3 s ttl), seconds per implementation: not linear in the count — renewing
   * the locks already held competes with taking the next ones. Measured once each (2 cores, other work on the
   * machine, load 4) for nestjs-redlock, node-redlock and floor; the others are assumed like their closest.
   */
  held100kSeconds: {
    'nestjs-redlock': 64,
    'node-redlock': 409,
    'sesamecare-redlock': 409, // assumed: a fork of node-redlock, with its renewal
    'redlock-universal': 409, // assumed: renews each lock on a timer too; the slow case, to be safe
    floor: 21,
    'floor+scripts': 21, // the floors take and release; they renew nothing
    'floor+autopipelining': 21,
    'floor+scripts+autopipelining': 21,
  } as Record<string, number>,
  /**
   * Scenario 10, per implementation: starting its processes and ending them (1.6 s, 2026-12-03, load 0.5);
   * per peer, its waiters still retrying after the end (node-redlock 9.7 s, redlock-universal 1.6 s).
   */
  fairnessStartMs: 1_600,
  fairnessPeerDrainMs: 5_000,
  /** Nodes answering at start, the wait until they are past the restart guard, the report. */
  startMs: 12_000,
};

export interface Estimate {
  readonly id: ScenarioId;
  readonly number: number;
  readonly title: string;
  readonly seconds: number;
}

/** Seconds per scenario that would run, in order. */
export function estimateScenarios(
  scale: ScaleProfile,
  impls: readonly Implementation[],
  heldCounts: readonly number[],
  only?: readonly ScenarioId[],
): Estimate[] {
  const { rounds } = scale;
  const seq = COST.sequentialCycleMs;
  // Each formula sees the implementations that take part in its scenario (the client variants: 1–3 only).
  const ms: Record<ScenarioId, (part: readonly Implementation[], n: number) => number> = {
    // The timed rounds, then one pass per implementation counting bytes (200 cycles).
    uncontended: (_, n) =>
      n * rounds * (scale.uncontended.warmup + scale.uncontended.iterations) * seq + n * 200 * seq,
    throughput: (_, n) => n * scale.throughput.warmupMs + n * rounds * scale.throughput.durationMs,
    // The last cycles of each round finish after its end (peers' retries): ~0.3 s.
    contention: (part) =>
      part.filter((impl) => impl.retries).length * rounds * (scale.contention.durationMs + 300),
    slowNode: (part, n) => {
      const { warmup, iterations, latencyMs, maxBlockMs } = scale.slowNode;
      // Acquisitions on both sides (with and without the slow node), and each round waits for its releases,
      // answered by the slow node; redlock-universal waits for the slow node on every acquire, so its rounds
      // end after its first block past maxBlockMs.
      const waits = part.some((impl) => impl.name === 'redlock-universal') ? maxBlockMs : 0;
      return rounds * (n * (2 * (warmup + iterations) * seq + 4 * latencyMs) + waits);
    },
    scale: (_, n) => {
      const { nodeCounts, latencyMs, warmup, iterations } = scale.scale;
      const cycles = n * rounds * (warmup + iterations);
      return nodeCounts.reduce((sum, count) => sum + cycles * COST.proxiedCycleMs(latencyMs, count), 0);
    },
    decorator: () => 3 * rounds * (scale.decorator.warmup + scale.decorator.iterations) * seq,
    memory: (part) => {
      const m = scale.memory;
      return part.reduce((sum, impl) => {
        const cycles = m.warmup + (impl.name === BASELINE ? m.cycles : m.peerCycles);
        return sum + COST.childMs + (cycles + m.held) * COST.concurrentCycleMs + m.holdMs;
      }, 0);
    },
    heldScale: (part) => {
      const { holdMs } = scale.heldScale;
      const slowest = Math.max(...Object.values(COST.held100kSeconds));
      const count = (impl: Implementation, held: number) =>
        held === HELD_100K
          ? (COST.held100kSeconds[impl.name] ?? slowest) * 1000
          : COST.heldCountMs + holdMs + held * COST.concurrentCycleMs;
      return part.reduce(
        (sum, impl) => sum + COST.childMs + heldCounts.reduce((all, held) => all + count(impl, held), 0),
        0,
      );
    },
    // Six runs of the throughput duration: readers, permits, skewed links, then the two redis-semaphore peers.
    beyondMutex: () => 6 * scale.throughput.durationMs + 2_000,
    // Per implementation: its processes starting and connecting, the run, the last waiters (long for peers).
    fairness: (part) =>
      part
        .filter((impl) => FAIRNESS_IMPLS.includes(impl.name))
        .reduce(
          (sum, impl) =>
            sum +
            scale.fairness.durationMs +
            COST.fairnessStartMs +
            (impl.name === BASELINE ? 0 : COST.fairnessPeerDrainMs),
          0,
        ),
  };
  const own = (id: ScenarioId) => impls.filter((impl) => runsIn(impl, id));
  return SCENARIOS.filter((scenario) => !only?.length || only.includes(scenario.id)).map((scenario) => ({
    id: scenario.id,
    number: scenario.number,
    title: scenario.title,
    seconds: ms[scenario.id](own(scenario.id), own(scenario.id).length) / 1000,
  }));
}

/** The whole run: the scenarios plus start-up. */
export function estimateTotal(estimates: readonly Estimate[]): number {
  return COST.startMs / 1000 + estimates.reduce((sum, e) => sum + e.seconds, 0);
}

/** `95 s`, `9.4 min`. */
export function duration(seconds: number): string {
  return seconds < 120 ? `${Math.round(seconds)} s` : `${(seconds / 60).toFixed(1)} min`;
}
