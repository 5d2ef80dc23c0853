import type { BenchLock } from '../adapters';
import { interleavedRounds, withImplementations } from '../rounds';
import { Samples } from '../stats';
import { adminClients, measureCpu } from '../redis-cpu';
import { now } from '../timing';
import type { BenchContext, Scenario, ScenarioResult } from './types';

/** `workers` loops, each on its own resource, doing acquire + release until `durationMs` is over. */
async function saturate(
  lock: BenchLock,
  workers: number,
  durationMs: number,
  ttl: number,
  tag: string,
): Promise<{ cycles: number; errors: number; latency: Samples; elapsed: number }> {
  const latency = new Samples(1 << 14);
  let cycles = 0;
  let errors = 0;
  const start = now();
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      const resource = `s2:${lock.name}:${tag}:${worker}`;
      while (now() < end) {
        const t0 = now();
        try {
          await lock.release(await lock.acquire(resource, ttl));
          cycles++;
          latency.push(now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { cycles, errors, latency, elapsed: now() - start };
}

const TITLE = 'Throughput: concurrent workers on distinct resources';

/** Scenario 2: many callers at once, no contention: how many lock cycles per second the client sustains. */
export const throughput: Scenario = {
  id: 'throughput',
  number: 2,
  title: TITLE,
  async run({ scale, urls, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { workers, warmupMs, durationMs } = scale.throughput;
    const admins = adminClients(nodes, urls.length);
    const rows = await withImplementations(
      impls,
      { urls, waitBudgetMs: scale.contention.waitBudgetMs, ttl: scale.ttl },
      async (locks) => {
        for (const lock of locks) await saturate(lock, workers, warmupMs, scale.ttl, 'warmup');
        return interleavedRounds(locks, scale.rounds, async (lock, round) => {
          log(`  2 throughput · round ${round + 1} · ${lock.name}`);
          const { result, clientUs, redisUs } = await measureCpu(admins, () =>
            saturate(lock, workers, durationMs, scale.ttl, `r${round}`),
          );
          const { cycles, errors, latency, elapsed } = result;
          return {
            clientCpuPerCycle: clientUs / cycles,
            redisCpuPerCycle: redisUs / cycles,
            opsPerSec: (cycles / elapsed) * 1000,
            cycleP50: latency.p(50),
            cycleP99: latency.p(99),
            errors,
          };
        });
      },
    ).finally(() => admins.forEach((admin) => admin.disconnect()));
    return {
      id: 'throughput',
      number: 2,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics: [
        { key: 'opsPerSec', label: 'acquire+release cycles/s', unit: '/s', better: 'higher' },
        { key: 'cycleP50', label: 'cycle p50', unit: 'ms', better: 'lower' },
        { key: 'cycleP99', label: 'cycle p99', unit: 'ms', better: 'lower' },
        { key: 'errors', label: 'failed cycles', unit: '', better: 'lower' },
        { key: 'clientCpuPerCycle', label: 'client CPU per cycle', unit: 'µs', better: 'lower' },
        { key: 'redisCpuPerCycle', label: 'Redis CPU per cycle (all nodes)', unit: 'µs', better: 'lower' },
      ],
      rows,
      notes: [
        `${urls.length} nodes, ${workers} concurrent workers each on its own resource, ${durationMs} ms per ` +
          `round after a ${warmupMs} ms warm-up; median of ${scale.rounds} interleaved rounds.`,
        'CPU per cycle: user+system time of this process (the client), and of the Redis nodes together (INFO ' +
          'cpu), over the round, divided by the cycles done. On one machine both share the same cores, so ' +
          'their sum bounds the throughput.',
      ],
    };
  },
};
