import type Redis from 'ioredis';
import { BASELINE, BenchLock } from '../adapters';
import { gcAvailable, settledHeap } from '../gc';
import { waitForNodeAge } from '../../test/support';
import { forEachConcurrently, now } from '../timing';
import { holdAtOnce } from './hold-at-once';
import { eachInOwnProcess } from './isolated';
import type { BenchContext, Scenario, ScenarioResult } from './types';

const MB = 1024 * 1024;
const TITLE = 'Memory: heap after many cycles, and with many locks held';

/** `count` acquire + release cycles, each on a resource never used before, `concurrency` at a time. */
async function distinctCycles(lock: BenchLock, tag: string, count: number, concurrency: number, ttl: number) {
  let failures = 0;
  await forEachConcurrently(count, concurrency, async (i) => {
    try {
      await lock.release(await lock.acquire(`s7:${lock.name}:${tag}:${i}`, ttl));
    } catch {
      failures++;
    }
  });
  return failures;
}

/** One implementation's pass, run in a process of its own (isolated-child.ts). */
export async function measureOne(
  lock: BenchLock,
  profile: BenchContext['scale']['memory'],
  ttl: number,
  admins: readonly Redis[],
): Promise<Record<string, number>> {
  const { warmup, concurrency, held, heldTtl, holdMs } = profile;
  const cycles = lock.name === BASELINE ? profile.cycles : profile.peerCycles;
  await distinctCycles(lock, 'warmup', warmup, concurrency, ttl);

  // Cycles: every key distinct, so a map keyed by resource that is never pruned shows up as growth.
  const before = await settledHeap();
  const t0 = now();
  const failures = await distinctCycles(lock, 'cycles', cycles, concurrency, ttl);
  const cyclesSeconds = (now() - t0) / 1000;
  const after = await settledHeap();

  // Many locks held at once, each kept alive by the implementation's own auto-extension, then all released.
  const heldBefore = after;
  const rssBefore = process.memoryUsage().rss;
  const hold = await holdAtOnce(lock, `s7:${lock.name}:held`, held, heldTtl, holdMs, admins);
  const releasedHeap = await settledHeap();

  return {
    cycles,
    growthMB: (after - before) / MB,
    cyclesPerSec: cycles / cyclesSeconds,
    failures,
    heldHeapMB: (hold.heap - heldBefore) / MB,
    heldRssMB: (hold.rss - rssBefore) / MB,
    holdCpuPct: (hold.clientCpuUs / 1000 / hold.wallMs) * 100,
    holdRedisCpuPct: ((hold.redisCpuSeconds * 1000) / hold.wallMs) * 100,
    held,
    heldFailures: hold.failures,
    afterReleaseMB: (releasedHeap - heldBefore) / MB,
  };
}

/** Scenario 7: memory per cycle and per held lock; internal state must not grow with distinct keys. */
export const memory: Scenario = {
  id: 'memory',
  number: 7,
  title: TITLE,
  async run({ scale, urls, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    await waitForNodeAge(nodes, Math.max(scale.memory.heldTtl, scale.ttl), log);
    // One implementation at a time, each in a process of its own: the heap and the RSS are the process's.
    const { rows, failures } = await eachInOwnProcess(
      impls,
      (impl) => ({ scenario: 'memory', impl: impl.name, urls, scale }),
      { scale, log, label: '7 memory' },
    );
    const { cycles, peerCycles, concurrency, held, heldTtl, holdMs } = scale.memory;
    return {
      id: 'memory',
      number: 7,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics: [
        { key: 'cycles', label: 'cycles (distinct keys)', unit: '', better: 'none' },
        { key: 'growthMB', label: 'heap growth after them', unit: 'MB', better: 'lower', ratio: false },
        { key: 'cyclesPerSec', label: `cycles/s (${concurrency} at a time)`, unit: '/s', better: 'higher' },
        { key: 'held', label: 'locks held at once', unit: '', better: 'none' },
        { key: 'heldHeapMB', label: `heap with ${held} held`, unit: 'MB', better: 'lower', ratio: false },
        { key: 'heldRssMB', label: `RSS with ${held} held`, unit: 'MB', better: 'lower', ratio: false },
        { key: 'holdCpuPct', label: 'client CPU while holding', unit: '%', better: 'lower' },
        { key: 'holdRedisCpuPct', label: 'Redis CPU while holding (all nodes)', unit: '%', better: 'lower' },
        {
          key: 'afterReleaseMB',
          label: 'heap after releasing them',
          unit: 'MB',
          better: 'lower',
          ratio: false,
        },
        { key: 'failures', label: 'failed cycles', unit: '', better: 'lower' },
        { key: 'heldFailures', label: 'locks not held', unit: '', better: 'lower' },
      ],
      rows,
      notes: [
        `${urls.length} nodes. Heap figures are heapUsed after a full GC${
          gcAvailable ? '' : ' — GC could not be exposed in this runtime, so they are noisy'
        }; growth is measured over ${cycles} acquire + release cycles for nestjs-redlock (${peerCycles} for ` +
          `the others, to keep the run short), each on a resource never used before (${concurrency} at a ` +
          'time), after a warm-up. One pass per implementation, each in a Node process of its own started ' +
          'for it, one after another: a process keeps the pages it has taken (RSS does not shrink after a GC), ' +
          'so in a shared process the implementations measured later would reuse them and show smaller RSS ' +
          'deltas; in their own processes the heap and RSS deltas are comparable.',
        `Held locks: ${held} distinct resources acquired (200 at a time) with a ${heldTtl} ms ttl through each ` +
          `implementation's using() (auto-extension on, each by its own policy below) and held ${holdMs} ms ` +
          'after the last was acquired; "locks not held" counts using() calls that failed or reported the lock ' +
          'lost (renewals that did not get through). CPU is user+system time over that hold as % of one core, ' +
          "for the implementation's process (the client) and for the Redis nodes together; heap/RSS are " +
          'deltas from just before acquiring.',
        `Auto-extension: ${impls.map((impl) => `${impl.name} — ${impl.extension}`).join('; ')}.`,
        ...failures,
      ],
    };
  },
};
