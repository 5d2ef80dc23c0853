import type { BenchLock } from '../adapters';
import { interleavedRounds, withImplementations } from '../rounds';
import { Samples } from '../stats';
import { now } from '../timing';
import type { BenchContext, Metric, Scenario, ScenarioResult } from './types';

/** Latencies of `iterations` sequential acquire + release cycles on one resource, after a warm-up. */
export async function sequentialCycles(
  lock: BenchLock,
  resource: (i: number) => string,
  ttl: number,
  warmup: number,
  iterations: number,
): Promise<Record<string, number>> {
  for (let i = 0; i < warmup; i++) await lock.release(await lock.acquire(resource(i), ttl));
  const acquire = new Samples(iterations);
  const release = new Samples(iterations);
  const cycle = new Samples(iterations);
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < iterations; i++) {
    const t0 = now();
    const handle = await lock.acquire(resource(i), ttl);
    const t1 = now();
    await lock.release(handle);
    const t2 = now();
    acquire.push(t1 - t0);
    release.push(t2 - t1);
    cycle.push(t2 - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  return {
    cpuPerCycle: (cpu.user + cpu.system) / iterations,
    cycleP50: cycle.p(50),
    cycleP99: cycle.p(99),
    acquireP50: acquire.p(50),
    acquireP99: acquire.p(99),
    releaseP50: release.p(50),
  };
}

export const UNCONTENDED_METRICS: readonly Metric[] = [
  { key: 'cycleP50', label: 'acquire+release p50', unit: 'ms', better: 'lower' },
  { key: 'cycleP99', label: 'acquire+release p99', unit: 'ms', better: 'lower' },
  { key: 'acquireP50', label: 'acquire p50', unit: 'ms', better: 'lower' },
  { key: 'acquireP99', label: 'acquire p99', unit: 'ms', better: 'lower' },
  { key: 'releaseP50', label: 'release p50', unit: 'ms', better: 'lower' },
  { key: 'cpuPerCycle', label: 'client CPU per cycle', unit: 'µs', better: 'lower' },
];

/** Scenario 1: one caller, no contention: the latency of a lock when nothing is in the way. */
const TITLE = 'Uncontended: sequential acquire + release';

export const uncontended: Scenario = {
  id: 'uncontended',
  number: 1,
  title: TITLE,
  async run({ scale, urls, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { warmup, iterations } = scale.uncontended;
    const rows = await withImplementations(
      impls,
      { urls, waitBudgetMs: scale.contention.waitBudgetMs, ttl: scale.ttl },
      (locks) =>
        interleavedRounds(locks, scale.rounds, (lock, round) => {
          log(`  1 uncontended · round ${round + 1} · ${lock.name}`);
          return sequentialCycles(lock, () => `s1:${lock.name}`, scale.ttl, warmup, iterations);
        }),
    );
    return {
      id: 'uncontended',
      number: 1,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics: UNCONTENDED_METRICS,
      rows,
      notes: [
        `${urls.length} nodes, ${iterations} cycles per round after ${warmup} warm-up cycles, same resource, ` +
          `ttl ${scale.ttl} ms; median of ${scale.rounds} interleaved rounds.`,
      ],
    };
  },
};
