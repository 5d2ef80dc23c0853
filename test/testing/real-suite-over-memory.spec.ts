import { performance } from 'node:perf_hooks';
import { Redlock, memoryNodes } from '../../lib';
import {
  Interval,
  findExclusionViolations,
  findOverAdmissions,
  findOverlaps,
  findStaleTokens,
} from '../safety/checkers/intervals';

/**
 * A chosen part of the real-node suite run over the shipped in-memory nodes (issue #32 "kept honest"): the
 * exclusion properties that test/core/mutual-exclusion.spec.ts, read-write.spec.ts and semaphore.spec.ts check
 * on real redis-server processes — many instances contending, every section recorded and checked by the same
 * checkers (overlaps, stale fencing tokens), with the unlocked negative control.
 */

/** A section's work: a few turns of the event loop, during which any other holder could enter. */
const work = async (turns: number) => {
  for (let i = 0; i <= turns; i++) await new Promise((resolve) => setImmediate(resolve));
};

interface Contention {
  instances: number;
  sections: number;
  resources: string[];
  /** The lock options of client `c`'s section `i` (undefined: no lock at all, the negative control). */
  options: (client: number, section: number) => Parameters<Redlock['acquire']>[1] | undefined;
}

async function contend({ instances, sections, resources, options }: Contention): Promise<Interval[]> {
  const nodes = memoryNodes(5);
  const clients = Array.from(
    { length: instances },
    () => new Redlock(nodes, { logger: false, ttl: 2_000, wait: 20_000, fencing: true }),
  );
  const intervals: Interval[] = [];
  await Promise.all(
    clients.map(async (redlock, client) => {
      for (let i = 0; i < sections; i++) {
        const resource = resources[(client + i) % resources.length];
        const given = options(client, i);
        const lock = given === undefined ? undefined : await redlock.acquire(resource, given);
        const start = performance.now();
        await work(i % 3);
        const end = performance.now();
        intervals.push({
          resource,
          holder: `client-${client}`,
          start,
          end,
          token: lock?.fencingToken,
          mode: given?.mode,
          permit: lock?.permit,
        });
        await lock?.release();
      }
    }),
  );
  await Promise.all(clients.map((redlock) => redlock.quit()));
  return intervals;
}

describe('the real-node exclusion checks, over memoryNodes(5)', () => {
  it('never lets two holders of a resource overlap; fencing tokens only grow (8 instances, 320 sections)', async () => {
    const intervals = await contend({
      instances: 8,
      sections: 40,
      resources: ['a', 'b', 'c'],
      options: () => ({}),
    });
    expect(intervals).toHaveLength(320);
    expect(findOverlaps(intervals)).toEqual([]);
    expect(findStaleTokens(intervals)).toEqual([]);
  });

  it('negative control: the same contention without locks overlaps', async () => {
    const intervals = await contend({
      instances: 8,
      sections: 10,
      resources: ['a'],
      options: () => undefined,
    });
    expect(findOverlaps(intervals).length).toBeGreaterThan(0);
  });

  it('readers share, writers are alone (6 instances, every third section a writer)', async () => {
    const intervals = await contend({
      instances: 6,
      sections: 30,
      resources: ['rw'],
      options: (client, i) => ({ mode: (client + i) % 3 === 0 ? 'write' : 'read' }),
    });
    expect(intervals.filter((s) => s.mode === 'read').length).toBeGreaterThan(0);
    expect(intervals.filter((s) => s.mode === 'write').length).toBeGreaterThan(0);
    expect(findExclusionViolations(intervals)).toEqual([]);
    expect(findStaleTokens(intervals)).toEqual([]);
    // The scenario shared: some readers did overlap each other.
    expect(findOverlaps(intervals).length).toBeGreaterThan(0);
  });

  it('a semaphore admits at most n holders, each permit alone (6 instances, permits: 2)', async () => {
    const intervals = await contend({
      instances: 6,
      sections: 20,
      resources: ['pool'],
      options: () => ({ permits: 2 }),
    });
    // At most two at once, and each permit alone (a permit is a mutex of its own).
    expect(findOverAdmissions(intervals, 2)).toEqual([]);
    const perPermit = intervals.map((s) => ({ ...s, resource: `${s.resource}#${s.permit}` }));
    expect(findOverlaps(perPermit)).toEqual([]);
    // The scenario filled the semaphore: two holders did run at once.
    expect(findOverAdmissions(intervals, 1).length).toBeGreaterThan(0);
    expect(new Set(intervals.map((s) => s.permit))).toEqual(new Set([0, 1]));
  });
});
