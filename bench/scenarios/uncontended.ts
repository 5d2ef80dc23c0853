import type { BenchLock } from '../adapters';
import { interleavedCycles, medianOverRounds, withImplementations } from '../rounds';
import { adminClients } from '../redis-cpu';
import { Samples } from '../stats';
import { bytesPerCycle } from '../wire-bytes';
import { now } from '../timing';
import type { BenchContext, Metric, Scenario, ScenarioResult } from './types';

/** Sequential cycles are interleaved between implementations in blocks of this many cycles. */
export const CYCLE_BLOCK = 50;

/**
 * Latencies of `iterations` sequential acquire + release cycles per implementation, after a warm-up; the
 * implementations take turns in blocks of {@link CYCLE_BLOCK} cycles (see `interleavedCycles`).
 */
export async function sequentialCycles(
  locks: readonly BenchLock[],
  resource: (lock: BenchLock, i: number) => string,
  ttl: number,
  warmup: number,
  iterations: number,
): Promise<Record<string, Record<string, number>>> {
  for (const lock of locks) {
    for (let i = 0; i < warmup; i++) await lock.release(await lock.acquire(resource(lock, i), ttl));
  }
  const samples = new Map(
    locks.map((lock) => [
      lock.name,
      { acquire: new Samples(iterations), release: new Samples(iterations), cycle: new Samples(iterations) },
    ]),
  );
  const cpu = await interleavedCycles(locks, iterations, CYCLE_BLOCK, async (lock, i) => {
    const t0 = now();
    const handle = await lock.acquire(resource(lock, i), ttl);
    const t1 = now();
    await lock.release(handle);
    const t2 = now();
    const own = samples.get(lock.name)!;
    own.acquire.push(t1 - t0);
    own.release.push(t2 - t1);
    own.cycle.push(t2 - t0);
  });
  const rows: Record<string, Record<string, number>> = {};
  for (const lock of locks) {
    const { acquire, release, cycle } = samples.get(lock.name)!;
    rows[lock.name] = {
      cpuPerCycle: cpu.get(lock.name)!,
      cycleP50: cycle.p(50),
      cycleP99: cycle.p(99),
      acquireP50: acquire.p(50),
      acquireP99: acquire.p(99),
      releaseP50: release.p(50),
    };
  }
  return rows;
}

/** {@link sequentialCycles} in `rounds` rounds; per implementation, the median of each figure over the rounds. */
export async function sequentialRounds(
  locks: readonly BenchLock[],
  rounds: number,
  resource: (lock: BenchLock, i: number) => string,
  ttl: number,
  warmup: number,
  iterations: number,
  onRound: (round: number) => void,
): Promise<Record<string, Record<string, number>>> {
  return medianOverRounds(locks, rounds, (round) => {
    onRound(round);
    return sequentialCycles(locks, resource, ttl, warmup, iterations);
  });
}

export const UNCONTENDED_METRICS: readonly Metric[] = [
  { key: 'cycleP50', label: 'acquire+release p50', unit: 'ms', better: 'lower' },
  { key: 'cycleP99', label: 'acquire+release p99', unit: 'ms', better: 'lower' },
  { key: 'acquireP50', label: 'acquire p50', unit: 'ms', better: 'lower' },
  { key: 'acquireP99', label: 'acquire p99', unit: 'ms', better: 'lower' },
  { key: 'releaseP50', label: 'release p50', unit: 'ms', better: 'lower' },
  { key: 'cpuPerCycle', label: 'client CPU per cycle', unit: 'µs', better: 'lower' },
  { key: 'bytesPerCycle', label: 'bytes per cycle (all nodes)', unit: 'B', better: 'lower' },
];

/** Cycles of the pass that counts bytes (after the timed rounds, one implementation at a time). */
const BYTE_CYCLES = 200;

/** Scenario 1: one caller, no contention: the latency of a lock when nothing is in the way. */
const TITLE = 'Uncontended: sequential acquire + release';

export const uncontended: Scenario = {
  id: 'uncontended',
  number: 1,
  title: TITLE,
  async run({ scale, urls, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { warmup, iterations } = scale.uncontended;
    const admins = adminClients(nodes, urls.length);
    const rows = await withImplementations(
      impls,
      { urls, waitBudgetMs: scale.contention.waitBudgetMs, ttl: scale.ttl },
      async (locks) => {
        const timed = await sequentialRounds(
          locks,
          scale.rounds,
          (lock) => `s1:${lock.name}`,
          scale.ttl,
          warmup,
          iterations,
          (round) =>
            log(`  1 uncontended · round ${round + 1} · ${locks.map((lock) => lock.name).join(', ')}`),
        );
        log(`  1 uncontended · bytes per cycle`);
        // One resource name for all, so key lengths differ only by each implementation's own prefix.
        for (const lock of locks)
          timed[lock.name].bytesPerCycle = await bytesPerCycle(
            admins,
            lock,
            's1-bytes',
            scale.ttl,
            BYTE_CYCLES,
          );
        return timed;
      },
    ).finally(() => admins.forEach((admin) => admin.disconnect()));
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
          `ttl ${scale.ttl} ms; implementations take turns every ${CYCLE_BLOCK} cycles; median of ` +
          `${scale.rounds} rounds. Bytes: requests and replies as the nodes count them (INFO stats), over ` +
          `${BYTE_CYCLES} cycles per implementation on one resource name.`,
      ],
    };
  },
};
