import type Redis from 'ioredis';
import type { BenchLock } from '../adapters';
import { settledHeap } from '../gc';
import { redisCpuSeconds } from '../redis-cpu';
import { forEachConcurrently, now, sleep } from '../timing';

/** What {@link holdAtOnce} saw: memory with every lock held, CPU over the hold, and how many were not held. */
export interface HoldMeasurement {
  /** heapUsed after a full GC, and RSS, once every lock was held (bytes). */
  readonly heap: number;
  readonly rss: number;
  /** Client user+system CPU (µs) and Redis CPU on all nodes (s) over the hold, and the hold's length (ms). */
  readonly clientCpuUs: number;
  readonly redisCpuSeconds: number;
  readonly wallMs: number;
  /** holdWhile() calls that failed or reported the lock lost. */
  readonly failures: number;
}

/**
 * Acquires `count` distinct resources (`<prefix>:<i>`, 200 at a time) through `holdWhile`, so each is kept
 * alive by the implementation's own auto-extension; holds them all for `holdMs`, then releases them all and
 * waits until every release is done. Shared by scenarios 7 and 8.
 */
export async function holdAtOnce(
  lock: BenchLock,
  prefix: string,
  count: number,
  ttl: number,
  holdMs: number,
  admins: readonly Redis[],
): Promise<HoldMeasurement> {
  let releaseAll!: () => void;
  const gate = new Promise<void>((resolve) => (releaseAll = resolve));
  const holders: Promise<void>[] = [];
  let failures = 0;
  await forEachConcurrently(count, 200, (i) => {
    return new Promise<void>((entered) => {
      const holder = lock.holdWhile(`${prefix}:${i}`, ttl, () => {
        entered();
        return gate;
      });
      holders.push(
        holder.catch(() => {
          failures++;
          entered();
        }),
      );
    });
  });
  const heap = await settledHeap();
  const rss = process.memoryUsage().rss;
  const redis0 = await redisCpuSeconds(admins);
  const cpu0 = process.cpuUsage();
  const w0 = now();
  await sleep(holdMs);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = now() - w0;
  const redisCpu = (await redisCpuSeconds(admins)) - redis0;
  releaseAll();
  await Promise.all(holders);
  return {
    heap,
    rss,
    clientCpuUs: cpu.user + cpu.system,
    redisCpuSeconds: redisCpu,
    wallMs,
    failures,
  };
}
