import type Redis from 'ioredis';
import type { BenchLock } from './adapters';

/** Bytes the given nodes have read and written on all connections since they started, summed (INFO stats). */
async function netBytes(admins: readonly Redis[]): Promise<number> {
  const infos = await Promise.all(admins.map((admin) => admin.info('stats')));
  let total = 0;
  for (const info of infos) {
    total += Number(/total_net_input_bytes:(\d+)/.exec(info)?.[1] ?? NaN);
    total += Number(/total_net_output_bytes:(\d+)/.exec(info)?.[1] ?? NaN);
  }
  return total;
}

/**
 * Bytes on the wire per sequential acquire + release of `lock` (requests and replies, all nodes, as the nodes
 * count them), over `cycles` cycles on `resource`. Deterministic, unlike time, so one pass is enough; the
 * readings' own INFO traffic (measured by two readings in a row) is taken off.
 */
export async function bytesPerCycle(
  admins: readonly Redis[],
  lock: BenchLock,
  resource: string,
  ttl: number,
  cycles: number,
): Promise<number> {
  const first = await netBytes(admins);
  const second = await netBytes(admins);
  for (let i = 0; i < cycles; i++) await lock.release(await lock.acquire(resource, ttl));
  const third = await netBytes(admins);
  return (third - second - (second - first)) / cycles;
}
