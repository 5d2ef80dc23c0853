import type { BenchLock } from '../adapters';
import { startLatencyProxies } from '../latency-proxies';
import { medianOverRounds, withImplementations } from '../rounds';
import { Samples } from '../stats';
import { now } from '../timing';
import type { BenchContext, Scenario, ScenarioResult } from './types';

/** Acquisitions per block; blocks alternate between the all-fast nodes and the set with the slow one. */
const BLOCK = 50;

/**
 * Sequential acquisitions on fresh resources, timing only the acquire, into `samples`. Releases are started
 * but not awaited (the caller awaits them at the end): a release that waits for the slow node would otherwise
 * set the pace, and this scenario asks whether one slow node slows down acquiring.
 */
async function timedAcquires(
  lock: BenchLock,
  tag: string,
  ttl: number,
  count: number,
  samples: Samples | undefined,
  releases: Promise<unknown>[],
): Promise<void> {
  for (let i = 0; i < count; i++) {
    const t0 = now();
    const handle = await lock.acquire(`s4:${lock.name}:${tag}:${i}`, ttl);
    samples?.push(now() - t0);
    releases.push(lock.release(handle).catch(() => undefined));
  }
}

/**
 * One round: per implementation, blocks of {@link BLOCK} acquisitions alternate between its lock on the fast
 * nodes and its lock on the set with the slow node (implementations take turns block by block, as in scenario
 * 1), so drifts in machine load hit both sides of the ratio alike.
 */
async function interleavedRound(
  pairs: readonly { readonly fast: BenchLock; readonly slow: BenchLock }[],
  round: number,
  ttl: number,
  warmup: number,
  iterations: number,
  maxMs: number,
): Promise<Record<string, Record<string, number>>> {
  const fast = new Map(pairs.map((p) => [p.fast.name, new Samples(iterations)]));
  const slow = new Map(pairs.map((p) => [p.fast.name, new Samples(iterations)]));
  const releases: Promise<unknown>[] = [];
  for (const pair of pairs) {
    await timedAcquires(pair.fast, `w${round}f`, ttl, warmup, undefined, releases);
    await timedAcquires(pair.slow, `w${round}s`, ttl, warmup, undefined, releases);
  }
  // Each implementation's own time budget: one that waits for the slow node (redlock-universal) stops adding
  // blocks early without cutting the others' samples short.
  const spent = new Map(pairs.map((p) => [p.fast.name, 0]));
  for (let block = 0; block * BLOCK < iterations; block++) {
    const active = pairs.filter((p) => block === 0 || spent.get(p.fast.name)! < maxMs);
    if (active.length === 0) break;
    for (let k = 0; k < active.length; k++) {
      const pair = active[(block + k) % active.length];
      const name = pair.fast.name;
      const began = now();
      const order = block % 2 === 0 ? (['fast', 'slow'] as const) : (['slow', 'fast'] as const);
      for (const side of order) {
        const samples = (side === 'fast' ? fast : slow).get(name)!;
        await timedAcquires(pair[side], `r${round}${side[0]}${block}`, ttl, BLOCK, samples, releases);
      }
      spent.set(name, spent.get(name)! + now() - began);
    }
  }
  await Promise.all(releases);
  const rows: Record<string, Record<string, number>> = {};
  for (const pair of pairs) {
    const name = pair.fast.name;
    const [f, s] = [fast.get(name)!, slow.get(name)!];
    rows[name] = {
      acquireP50: s.p(50),
      acquireP99: s.p(99),
      fastAcquireP50: f.p(50),
      vsFast: s.p(50) / f.p(50),
      samples: s.length,
    };
  }
  return rows;
}

const TITLE = 'One slow node: one of the nodes behind added latency';

/** Scenario 4: one node answers late. A majority-based client should not notice. */
export const slowNode: Scenario = {
  id: 'slowNode',
  number: 4,
  title: TITLE,
  async run({ scale, urls, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { latencyMs, warmup, iterations, maxBlockMs } = scale.slowNode;
    const slowest = nodes.nodes[urls.length - 1];
    // In a child process: the proxy's own work neither counts as the client's CPU nor competes with its loop.
    const proxy = await startLatencyProxies([slowest], latencyMs);
    const slowUrls = [...urls.slice(0, -1), proxy.urls[0]];
    const setup = { waitBudgetMs: scale.contention.waitBudgetMs, ttl: scale.ttl };
    try {
      const rows = await withImplementations(impls, { ...setup, urls }, (fastLocks) =>
        withImplementations(impls, { ...setup, urls: slowUrls }, (slowLocks) => {
          const pairs = fastLocks.map((fast, i) => ({ fast, slow: slowLocks[i] }));
          return medianOverRounds(fastLocks, scale.rounds, (round) => {
            log(`  4 slow node · round ${round + 1} · ${fastLocks.map((lock) => lock.name).join(', ')}`);
            return interleavedRound(pairs, round, scale.ttl, warmup, iterations, maxBlockMs);
          });
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
          { key: 'fastAcquireP50', label: 'acquire p50 (no slow node)', unit: 'ms', better: 'lower' },
          { key: 'vsFast', label: 'slow ÷ no slow node', unit: '×', better: 'lower' },
          { key: 'samples', label: 'acquisitions timed (slow)', unit: '', better: 'none' },
        ],
        rows,
        notes: [
          `${urls.length} nodes; node ${slowest.index + 1} behind a TCP proxy in a child process adding ` +
            `${latencyMs} ms each way (+${2 * latencyMs} ms per round trip). Per round and implementation, ` +
            `blocks of ${BLOCK} sequential acquisitions on fresh resources alternate between the set with the ` +
            `slow node and the same nodes without the proxy (up to ${iterations} timed on each side, after ` +
            `${warmup} warm-up each; an implementation stops adding blocks to a round after ${maxBlockMs} ms of ` +
            `its own); releases are not ` +
            `awaited in the loop. "slow ÷ no slow node" divides the two p50s of the same rounds; median of ` +
            `${scale.rounds} rounds.`,
        ],
      };
    } finally {
      await proxy.stop().catch(() => undefined);
    }
  },
};
