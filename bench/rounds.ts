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
