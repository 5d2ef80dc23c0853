import type Redis from 'ioredis';
import type { BenchLock } from '../adapters';
import { settledHeap } from '../gc';
import { waitForNodeAge } from '../../test/support';
import { holdAtOnce } from './hold-at-once';
import { eachInOwnProcess } from './isolated';
import type { BenchContext, Metric, Scenario, ScenarioResult } from './types';

const TITLE = 'Held locks at scale: cost per held, auto-extended lock';
const KB = 1024;

/**
 * `count` locks held at once through `holdWhile` for `holdMs`; CPU and memory per held lock. Run in the
 * implementation's own process (isolated-child.ts), every count one after another.
 */
export async function holdMany(
  lock: BenchLock,
  count: number,
  ttl: number,
  holdMs: number,
  admins: readonly Redis[],
): Promise<Record<string, number>> {
  const heap0 = await settledHeap();
  const rss0 = process.memoryUsage().rss;
  const hold = await holdAtOnce(lock, `s8:${lock.name}:${count}`, count, ttl, holdMs, admins);
  const wall = hold.wallMs;
  const perLockUs = (us: number) => us / (wall / 1000) / count;
  return {
    [`cpuPct${count}`]: (hold.clientCpuUs / 1000 / wall) * 100,
    [`cpuUs${count}`]: perLockUs(hold.clientCpuUs),
    [`redisUs${count}`]: perLockUs(hold.redisCpuSeconds * 1e6),
    [`heapKB${count}`]: (hold.heap - heap0) / KB / count,
    [`rssKB${count}`]: (hold.rss - rss0) / KB / count,
    [`failures${count}`]: hold.failures,
  };
}

/** Which counts run: BENCH_HELD_COUNTS=1000,10000,100000 overrides the scale's (`--held-100k` sets it so). */
export function heldCounts(profile: BenchContext['scale']['heldScale']): readonly number[] {
  const env = process.env.BENCH_HELD_COUNTS;
  return env ? env.split(',').map((count) => Number(count.trim())) : profile.counts;
}

/**
 * Scenario 8: 1,000 / 10,000 (with `--held-100k` also 100,000) locks held and auto-extended at once, each
 * implementation by its own policy. Per held lock: client CPU (µs per second held), Redis CPU (all nodes), heap
 * and RSS; flat is good.
 */
export const heldScale: Scenario = {
  id: 'heldScale',
  number: 8,
  title: TITLE,
  async run({ scale, urls, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { ttl, holdMs } = scale.heldScale;
    const counts = heldCounts(scale.heldScale);
    await waitForNodeAge(nodes, Math.max(ttl, scale.ttl), log);
    // One implementation at a time, each in a process of its own (its counts in order, in that process):
    // the heap, the RSS and the CPU are the process's.
    const { rows, failures } = await eachInOwnProcess(
      impls,
      (impl) => ({ scenario: 'heldScale', impl: impl.name, urls, scale, counts }),
      { scale, log, label: '8 held locks' },
    );
    const metrics: Metric[] = counts.flatMap((count): Metric[] => [
      { key: `cpuPct${count}`, label: `client CPU, ${count} held`, unit: '%', better: 'lower' },
      { key: `cpuUs${count}`, label: `client CPU per held lock, ${count}`, unit: 'µs/s', better: 'lower' },
      { key: `redisUs${count}`, label: `Redis CPU per held lock, ${count}`, unit: 'µs/s', better: 'lower' },
      {
        key: `heapKB${count}`,
        label: `heap per held lock, ${count}`,
        unit: 'KB',
        better: 'lower',
        ratio: false,
      },
      {
        key: `rssKB${count}`,
        label: `RSS per held lock, ${count}`,
        unit: 'KB',
        better: 'lower',
        ratio: false,
      },
      { key: `failures${count}`, label: `locks not held, ${count}`, unit: '', better: 'lower' },
    ]);
    return {
      id: 'heldScale',
      number: 8,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics,
      rows,
      notes: [
        `${urls.length} nodes; ${counts.join(' / ')} distinct resources acquired (200 at a time) with a ${ttl} ms ` +
          `ttl through each implementation's using() and held ${holdMs} ms after the last was acquired. CPU ` +
          'per held lock is user+system time over the hold divided by its length and by the count (µs per ' +
          "second held), for the implementation's process and for the Redis nodes together; heap (after a " +
          'full GC) and RSS per held lock are deltas from just before acquiring, divided by the count. ' +
          'Implementations whose auto-extension renews only near the end of the ttl may not renew at all ' +
          'within the hold.',
        'Each implementation ran in a Node process of its own, started for it (its counts one after another ' +
          'in that process), so RSS deltas are comparable: a process keeps the pages it has taken, and an ' +
          'implementation measured after another in the same process would reuse them.',
        ...failures,
      ],
    };
  },
};
