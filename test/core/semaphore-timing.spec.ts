import { Lock, LockBusyError } from '../../lib';
import type { RedlockCore } from '../../lib/core';
import { Interval, findOverAdmissions, findStaleTokens } from '../safety/checkers/intervals';
import { Prng } from '../safety/sim/prng';
import { VirtualClock } from './virtual-clock';
import { modelCluster } from './model-nodes';

/** Work that takes `ms` of virtual time. */
const working = (clock: VirtualClock, ms: number) =>
  new Promise<void>((resolve) => clock.setTimeout(resolve, ms));

/**
 * The timing of counting semaphores on a virtual clock over in-memory nodes that run the model of the scripts
 * (moved from semaphore.spec.ts, where it slept on the real clock over real nodes): holders working random
 * whiles under contention, a waiter woken by a permit's release, a permit renewed past its ttl.
 */
describe('semaphore timing (virtual clock, in-memory model nodes)', () => {
  /** Workers on several instances taking permits of one resource, each working a random (virtual) while. */
  async function workload(
    clock: VirtualClock,
    rng: Prng,
    instances: readonly RedlockCore[],
    resourceOf: (worker: number) => string,
    permits: number,
    rounds: number,
  ): Promise<{ sections: (Interval & { permit: number })[]; permitsSeen: Set<number> }> {
    const sections: (Interval & { permit: number })[] = [];
    const permitsSeen = new Set<number>();
    const all = Promise.all(
      Array.from({ length: instances.length * 3 }, async (_, worker) => {
        const redlock = instances[worker % instances.length];
        for (let round = 0; round < rounds; round++) {
          try {
            await redlock.using(
              resourceOf(worker),
              { permits, wait: 5_000, fencing: true },
              async (lock: Lock) => {
                const start = clock.now();
                permitsSeen.add(lock.permit!);
                await working(clock, 2 + rng.next() * 15);
                sections.push({
                  resource: 'r',
                  holder: `w${worker}`,
                  start,
                  end: clock.now(),
                  token: lock.fencingToken,
                  permit: lock.permit!,
                });
              },
            );
          } catch (error) {
            if (!(error instanceof LockBusyError)) throw error;
          }
        }
      }),
    );
    await clock.advance(120_000);
    await all;
    return { sections, permitsSeen };
  }

  it('never more than n holders at once across instances; tokens rise in grant order; every permit used', async () => {
    const { clock, rng, instance } = modelCluster(5);
    const instances = [0, 1, 2].map(() => instance());
    const { sections, permitsSeen } = await workload(clock, rng, instances, () => 'sem:pool', 3, 8);
    expect(sections.length).toBeGreaterThan(50);
    expect(findOverAdmissions(sections, 3)).toEqual([]);
    // Per permit, successive holders are exclusive: their tokens rise in grant order (DESIGN §14).
    expect(findStaleTokens(sections.map((s) => ({ ...s, resource: `r#${s.permit}` })))).toEqual([]);
    expect([...permitsSeen].sort()).toEqual([0, 1, 2]);
    // Contended: at some moment all three permits were held at once (the limit was reached, not just kept).
    expect(findOverAdmissions(sections, 2).length).toBeGreaterThan(0);
  });

  it('negative control: the checker finds over-admission when the holders do not share one semaphore', async () => {
    const { clock, rng, instance } = modelCluster(5);
    const instances = [0, 1].map(() => instance());
    // Each worker its own resource: nothing limits them, and the checker (told they are one) must see it.
    const { sections } = await workload(clock, rng, instances, (worker) => `sem:own:${worker}`, 3, 3);
    expect(findOverAdmissions(sections, 3).length).toBeGreaterThan(0);
  });

  it('the next caller, waiting while every permit is held, is woken by a release and takes the freed permit', async () => {
    const { clock, instance } = modelCluster();
    const [a, b] = [instance(), instance()];
    const held = await Promise.all([
      a.acquire('sem:two', { permits: 2 }),
      a.acquire('sem:two', { permits: 2 }),
    ]);
    expect(held.map((lock) => lock.permit).sort()).toEqual([0, 1]);
    let third: Lock | undefined;
    const waiting = b.acquire('sem:two', { permits: 2, wait: 10_000 }).then((lock) => (third = lock));
    await clock.advance(100);
    expect(third).toBeUndefined(); // busy: both permits held for their ttl (10 s)
    await held[1].release();
    await clock.advance(10);
    expect(third?.permit).toBe(held[1].permit);
    await waiting;
    expect(b.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
    await Promise.all([third!.release(), held[0].release()]);
  });

  it('a permit is a lock like any other: auto-extended in using() past its ttl', async () => {
    const { clock, instance } = modelCluster();
    const [redlock, other] = [instance({ ttl: 300 }), instance()];
    const tokens: number[] = [];
    let checked = false;
    const using = redlock.using('sem:using', { permits: 1, fencing: true }, async (lock) => {
      tokens.push(lock.fencingToken!);
      await working(clock, 700); // beyond the ttl: renewed
      expect(lock.signal.aborted).toBe(false);
      const intruder = await other.tryAcquire('sem:using', { permits: 1 });
      expect(intruder?.value ?? null).toBeNull(); // still held on the nodes
      checked = true;
    });
    await clock.advance(800);
    await using;
    expect(checked).toBe(true);
    const next = redlock.acquire('sem:using', { permits: 1, fencing: true });
    await clock.advance(0);
    tokens.push((await next).fencingToken!);
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
  });
});
