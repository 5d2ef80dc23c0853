import { performance } from 'node:perf_hooks';

/** Monotonic milliseconds. */
export const now = (): number => performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `worker(i)` for i in [0, count) with at most `concurrency` in flight; resolves when all are done. */
export async function forEachConcurrently(
  count: number,
  concurrency: number,
  worker: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await worker(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
}
