import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { Redlock } from '../../lib';
import { Interval, findOverlaps } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

/**
 * Many clients (one Redlock each, own connections) contend for a few resources; every section is recorded.
 * A section's work is `work(i)`: I/O (round trips to a node), during which any other holder could enter.
 */
async function contend(
  clients: number,
  sectionsPerClient: number,
  resources: string[],
  lockFor: (client: number) => ((resource: string) => Promise<() => Promise<void>>) | undefined,
  work: (section: number) => Promise<unknown>,
): Promise<Interval[]> {
  const intervals: Interval[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      const lock = lockFor(client);
      for (let i = 0; i < sectionsPerClient; i++) {
        const resource = resources[(client + i) % resources.length];
        const unlock = lock ? await lock(resource) : async () => undefined;
        const start = performance.now();
        await work(i);
        const end = performance.now();
        intervals.push({ resource, holder: `client-${client}`, start, end });
        await unlock();
      }
    }),
  );
  return intervals;
}

describe('mutual exclusion over 5 real nodes', () => {
  const nodes = useRedisNodes(5, {
    afterAll: async () => {
      admin?.disconnect();
      await closeAll();
    },
    flushAfterEach: false,
  });
  const redlocks: Redlock[] = [];
  let admin: Redis | undefined;
  /** A section's work: one to three round trips (sections of different lengths, as 1-3 ms sleeps were). */
  const work = async (section: number) => {
    for (let i = 0; i <= section % 3; i++) await admin!.ping();
  };

  beforeAll(async () => {
    for (let i = 0; i < 8; i++) redlocks.push(await redlockOn(nodes, { ttl: 2_000, wait: 20_000 }));
    admin = nodes.nodes[0].redis();
  });

  it('never lets two holders of a resource overlap (8 clients, 3 resources, 320 sections)', async () => {
    let expiredBeforeEnd = 0;
    const intervals = await contend(
      8,
      40,
      ['stock:a', 'stock:b', 'stock:c'],
      (client) => async (resource) => {
        const lock = await redlocks[client].acquire(resource);
        return async () => {
          // The property is only meaningful for sections that ended while the lock was still valid.
          if (lock.remainingTime <= 0) expiredBeforeEnd++;
          await lock.release();
        };
      },
      work,
    );
    expect(intervals).toHaveLength(320);
    expect(expiredBeforeEnd).toBe(0);
    expect(findOverlaps(intervals)).toEqual([]);
  });

  it('negative control: the same workload without the lock is caught by the checker', async () => {
    const intervals = await contend(8, 10, ['stock:a'], () => undefined, work);
    expect(findOverlaps(intervals).length).toBeGreaterThan(0);
  });

  it('the checker catches an overlap with any earlier section, not only the previous one', () => {
    const overlaps = findOverlaps([
      { resource: 'r', holder: 'a', start: 0, end: 100 },
      { resource: 'r', holder: 'b', start: 10, end: 20 },
      { resource: 'r', holder: 'c', start: 50, end: 60 },
      { resource: 'other', holder: 'd', start: 0, end: 100 },
    ]);
    expect(overlaps.map((o) => o.second.holder)).toEqual(['b', 'c']);
  });

  it('multi-resource locks are all-or-nothing: overlapping sets exclude each other', async () => {
    const intervals: Interval[] = [];
    const sets = [
      ['account:1', 'account:2'],
      ['account:2', 'account:3'],
      ['account:3', 'account:1'],
    ];
    await Promise.all(
      sets.map(async (resources, client) => {
        for (let i = 0; i < 15; i++) {
          await redlocks[client].using(resources, async () => {
            const start = performance.now();
            await work(1);
            const end = performance.now();
            for (const resource of resources) intervals.push({ resource, holder: `c${client}`, start, end });
          });
        }
      }),
    );
    expect(intervals).toHaveLength(90);
    expect(findOverlaps(intervals)).toEqual([]);
  });
});
