import { startTcpProxy } from '../../test/support';
import type { BenchLock } from '../adapters';
import { interleavedRounds, withImplementations } from '../rounds';
import { Samples } from '../stats';
import { now } from '../timing';
import type { BenchContext, Scenario, ScenarioResult } from './types';

/**
 * Sequential acquisitions on fresh resources, timing only the acquire. Releases are started but not awaited
 * (they are collected and awaited at the end): a release that waits for the slow node would otherwise set
 * the pace, and this scenario asks whether one slow node slows down acquiring.
 */
async function timedAcquires(
  lock: BenchLock,
  tag: string,
  ttl: number,
  warmup: number,
  iterations: number,
  maxMs: number,
): Promise<Samples> {
  const releases: Promise<unknown>[] = [];
  const samples = new Samples(iterations);
  const end = now() + maxMs;
  for (let i = 0; i < warmup + iterations; i++) {
    if (now() > end && samples.length >= 20) break;
    const t0 = now();
    const handle = await lock.acquire(`s4:${lock.name}:${tag}:${i}`, ttl);
    if (i >= warmup) samples.push(now() - t0);
    releases.push(lock.release(handle).catch(() => undefined));
  }
  await Promise.all(releases);
  return samples;
}

const TITLE = 'One slow node: one of the nodes behind added latency';

/** Scenario 4: one node answers late. A majority-based client should not notice. */
export const slowNode: Scenario = {
  id: 'slowNode',
  number: 4,
  title: TITLE,
  async run({ scale, urls, nodes, impls, results, log }: BenchContext): Promise<ScenarioResult> {
    const { latencyMs, warmup, iterations, maxBlockMs } = scale.slowNode;
    const slow = nodes.nodes[urls.length - 1];
    const proxy = await startTcpProxy(slow.port, slow.host);
    proxy.setLatency(latencyMs);
    const slowUrls = [...urls.slice(0, -1), proxy.url];
    try {
      const rows = await withImplementations(
        impls,
        { urls: slowUrls, waitBudgetMs: scale.contention.waitBudgetMs, ttl: scale.ttl },
        (locks) =>
          interleavedRounds(locks, scale.rounds, async (lock, round) => {
            log(`  4 slow node · round ${round + 1} · ${lock.name}`);
            const samples = await timedAcquires(lock, `r${round}`, scale.ttl, warmup, iterations, maxBlockMs);
            const baseline = results.uncontended?.rows[lock.name]?.acquireP50 ?? NaN;
            return {
              acquireP50: samples.p(50),
              acquireP99: samples.p(99),
              samples: samples.length,
              uncontendedAcquireP50: baseline,
              vsUncontended: samples.p(50) / baseline,
            };
          }),
      );
      return {
        id: 'slowNode',
        number: 4,
        title: TITLE,
        status: 'ok',
        baseline: 'nestjs-redlock',
        metrics: [
          { key: 'acquireP50', label: 'acquire p50 (slow node)', unit: 'ms', better: 'lower' },
          { key: 'acquireP99', label: 'acquire p99 (slow node)', unit: 'ms', better: 'lower' },
          { key: 'uncontendedAcquireP50', label: 'acquire p50 (scenario 1)', unit: 'ms', better: 'lower' },
          { key: 'vsUncontended', label: 'slow / scenario 1', unit: '×', better: 'lower' },
          { key: 'samples', label: 'acquisitions timed', unit: '', better: 'none' },
        ],
        rows,
        notes: [
          `${urls.length} nodes; node ${slow.index + 1} behind an in-process TCP proxy adding ${latencyMs} ms ` +
            `each way (+${2 * latencyMs} ms per round trip). ${iterations} sequential acquisitions per round on ` +
            `fresh resources after a warm-up (a round stops early after ${maxBlockMs} ms, with at least 20), ` +
            'releases not awaited in the loop. "slow / scenario 1" divides by the same implementation\'s ' +
            'acquire p50 of scenario 1.',
        ],
      };
    } finally {
      await proxy.close().catch(() => undefined);
    }
  },
};
