import type { BenchLock } from '../adapters';
import { interleavedRounds, withImplementations } from '../rounds';
import { Samples } from '../stats';
import { now, sleep } from '../timing';
import type { BenchContext, Scenario, ScenarioResult } from './types';

interface ContentionFigures {
  sections: number;
  ownerChanges: number;
  gaveUp: number;
  overlaps: number;
  wait: Samples;
}

/**
 * `workers` loops on one resource: acquire (timing the wait), hold ~`holdMs`, release, again, until
 * `durationMs` is over. Counts critical sections, changes of owner, calls that gave up, and — as a sanity
 * check of the measurement — sections that overlapped another (must be 0).
 */
async function contend(
  lock: BenchLock,
  resource: string,
  workers: number,
  holdMs: number,
  durationMs: number,
  ttl: number,
): Promise<ContentionFigures> {
  const figures: ContentionFigures = {
    sections: 0,
    ownerChanges: 0,
    gaveUp: 0,
    overlaps: 0,
    wait: new Samples(),
  };
  let lastOwner = -1;
  let inside = 0;
  const end = now() + durationMs;
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (now() < end) {
        const t0 = now();
        let handle: unknown;
        try {
          handle = await lock.acquire(resource, ttl);
        } catch {
          figures.gaveUp++;
          continue;
        }
        const acquiredAt = now();
        figures.wait.push(acquiredAt - t0);
        if (++inside > 1) figures.overlaps++;
        if (acquiredAt < end) {
          figures.sections++;
          if (worker !== lastOwner) figures.ownerChanges++;
        }
        lastOwner = worker;
        await sleep(holdMs);
        inside--;
        await lock.release(handle).catch(() => undefined);
      }
    }),
  );
  return figures;
}

const TITLE = 'Contention: workers on one resource, ~1 ms hold';

/** Scenario 3: many callers want the same lock: how fast does it change hands, how long do they wait. */
export const contention: Scenario = {
  id: 'contention',
  number: 3,
  title: TITLE,
  async run({ scale, urls, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { workers, holdMs, durationMs, waitBudgetMs } = scale.contention;
    const withRetries = impls.filter((impl) => impl.retries);
    const rows = await withImplementations(withRetries, { urls, waitBudgetMs, ttl: scale.ttl }, (locks) =>
      interleavedRounds(locks, scale.rounds, async (lock, round) => {
        log(`  3 contention · round ${round + 1} · ${lock.name}`);
        const f = await contend(lock, `s3:${lock.name}:r${round}`, workers, holdMs, durationMs, scale.ttl);
        return {
          sectionsPerSec: (f.sections / durationMs) * 1000,
          ownerChangesPerSec: (f.ownerChanges / durationMs) * 1000,
          waitP50: f.wait.p(50),
          waitP99: f.wait.p(99),
          gaveUp: f.gaveUp,
          overlaps: f.overlaps,
        };
      }),
    );
    return {
      id: 'contention',
      number: 3,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics: [
        { key: 'sectionsPerSec', label: 'critical sections/s', unit: '/s', better: 'higher' },
        { key: 'ownerChangesPerSec', label: 'owner changes/s', unit: '/s', better: 'higher' },
        { key: 'waitP50', label: 'wait p50', unit: 'ms', better: 'lower' },
        { key: 'waitP99', label: 'wait p99', unit: 'ms', better: 'lower' },
        { key: 'gaveUp', label: 'calls that gave up', unit: '', better: 'lower' },
        { key: 'overlaps', label: 'overlapping sections', unit: '', better: 'lower' },
      ],
      rows,
      notes: [
        `${urls.length} nodes, ${workers} workers on one resource, hold ≈ ${holdMs} ms (setTimeout), ` +
          `${durationMs} ms per round; median of ${scale.rounds} interleaved rounds.`,
        `Each peer runs with its own default retry settings; nestjs-redlock gets a ${waitBudgetMs} ms wait ` +
          'budget (its other retry settings are defaults). The raw floor has no retry policy and is left out.',
        '"overlapping sections" checks the measurement itself: two holders at once would be a safety bug.',
      ],
    };
  },
};
