import type { BenchLock, Implementation, SetupOptions } from './adapters';
import { medianOfRounds } from './stats';

/** Sets every implementation up on the same nodes, runs `fn`, and always tears them down. */
export async function withImplementations<T>(
  impls: readonly Implementation[],
  options: SetupOptions,
  fn: (locks: BenchLock[]) => Promise<T>,
): Promise<T> {
  const locks: BenchLock[] = [];
  try {
    for (const impl of impls) locks.push(await impl.setup(options));
    return await fn(locks);
  } finally {
    await Promise.all(locks.map((lock) => lock.teardown().catch(() => undefined)));
  }
}

/**
 * Runs `measure` for every implementation in each of `rounds` rounds, rotating the order from round to
 * round so no implementation always runs first (cold) or last, and returns per implementation the median of
 * each metric over the rounds.
 */
export async function interleavedRounds<L extends { readonly name: string }>(
  subjects: readonly L[],
  rounds: number,
  measure: (subject: L, round: number) => Promise<Record<string, number>>,
): Promise<Record<string, Record<string, number>>> {
  const perSubject = new Map<string, Record<string, number>[]>(subjects.map((s) => [s.name, []]));
  const step = Math.max(1, Math.ceil(subjects.length / Math.max(1, rounds)));
  for (let round = 0; round < rounds; round++) {
    const offset = (round * step) % subjects.length;
    const order = [...subjects.slice(offset), ...subjects.slice(0, offset)];
    for (const subject of order) perSubject.get(subject.name)!.push(await measure(subject, round));
  }
  const rows: Record<string, Record<string, number>> = {};
  for (const subject of subjects) rows[subject.name] = medianOfRounds(perSubject.get(subject.name)!);
  return rows;
}

/**
 * Runs `cycle` `iterations` times for every subject, interleaved in blocks of `blockSize` cycles whose order
 * rotates from block to block, so drifts in machine load (other tenants, CPU frequency) hit every subject
 * alike; rounds of thousands of cycles per subject do not cancel them on a shared machine. `cycle` records
 * its own latencies. Resolves per subject the client CPU (user + system) per cycle, in µs.
 */
export async function interleavedCycles<S extends { readonly name: string }>(
  subjects: readonly S[],
  iterations: number,
  blockSize: number,
  cycle: (subject: S, i: number) => Promise<void>,
): Promise<Map<string, number>> {
  const cpu = new Map<string, number>(subjects.map((s) => [s.name, 0]));
  const blocks = Math.ceil(iterations / blockSize);
  for (let block = 0; block < blocks; block++) {
    for (let k = 0; k < subjects.length; k++) {
      const subject = subjects[(block + k) % subjects.length];
      const first = block * blockSize;
      const last = Math.min(iterations, first + blockSize);
      const cpu0 = process.cpuUsage();
      for (let i = first; i < last; i++) await cycle(subject, i);
      const used = process.cpuUsage(cpu0);
      cpu.set(subject.name, cpu.get(subject.name)! + used.user + used.system);
    }
  }
  // Every subject ran every block, so each ran `iterations` cycles.
  return new Map(subjects.map((s) => [s.name, cpu.get(s.name)! / Math.max(1, iterations)]));
}

/**
 * Runs `measureAll` (which measures every subject at once, e.g. with {@link interleavedCycles}) `rounds`
 * times and returns per subject the median of each figure over the rounds.
 */
export async function medianOverRounds<S extends { readonly name: string }>(
  subjects: readonly S[],
  rounds: number,
  measureAll: (round: number) => Promise<Record<string, Record<string, number>>>,
): Promise<Record<string, Record<string, number>>> {
  const results: Record<string, Record<string, number>>[] = [];
  for (let round = 0; round < rounds; round++) results.push(await measureAll(round));
  return Object.fromEntries(
    subjects.map((s) => [s.name, medianOfRounds(results.map((result) => result[s.name]))]),
  );
}
