import { InvalidArgumentError, Lock, LockBusyError, Redlock } from '../../lib';
import { Interval, findOverAdmissions, findStaleTokens } from '../safety/checkers/intervals';
import { useRedisNodes } from '../support';
import { closeAll, delay, eventually, redlockOn, valuesOnNodes } from './helpers';

describe('counting semaphores: { permits: n } over the quorum (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  /** Workers on several instances taking permits of one resource, each working a random while. */
  async function workload(
    instances: readonly Redlock[],
    resourceOf: (worker: number) => string,
    permits: number,
    rounds: number,
  ): Promise<{ sections: (Interval & { permit: number })[]; permitsSeen: Set<number>; busy: number }> {
    const sections: (Interval & { permit: number })[] = [];
    const permitsSeen = new Set<number>();
    let busy = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: instances.length * 3 }, async (_, worker) => {
        const redlock = instances[worker % instances.length];
        for (let round = 0; round < rounds; round++) {
          try {
            await redlock.using(
              resourceOf(worker),
              { permits, wait: 5_000, fencing: true },
              async (lock: Lock) => {
                const start = performance.now() - t0;
                permitsSeen.add(lock.permit!);
                await delay(2 + Math.random() * 15);
                const end = performance.now() - t0;
                sections.push({
                  resource: 'r',
                  holder: `w${worker}`,
                  start,
                  end,
                  token: lock.fencingToken,
                  permit: lock.permit!,
                });
              },
            );
          } catch (error) {
            if (!(error instanceof LockBusyError)) throw error;
            busy++;
          }
        }
      }),
    );
    return { sections, permitsSeen, busy };
  }

  it('never more than n holders at once across instances; tokens rise in grant order; every permit used', async () => {
    const instances = await Promise.all([0, 1, 2].map(() => redlockOn(redisNodes)));
    const { sections, permitsSeen } = await workload(instances, () => 'sem:pool', 3, 8);
    expect(sections.length).toBeGreaterThan(50);
    expect(findOverAdmissions(sections, 3)).toEqual([]);
    // Per permit, successive holders are exclusive: their tokens rise in grant order (DESIGN §14).
    expect(findStaleTokens(sections.map((s) => ({ ...s, resource: `r#${s.permit}` })))).toEqual([]);
    expect([...permitsSeen].sort()).toEqual([0, 1, 2]);
    // Contended: at some moment all three permits were held at once (the limit was reached, not just kept).
    expect(findOverAdmissions(sections, 2).length).toBeGreaterThan(0);
  });

  it('negative control: the checker finds over-admission when the holders do not share one semaphore', async () => {
    const instances = await Promise.all([0, 1].map(() => redlockOn(redisNodes)));
    // Each worker its own resource: nothing limits them, and the checker (told they are one) must see it.
    const { sections } = await workload(instances, (worker) => `sem:own:${worker}`, 3, 3);
    expect(findOverAdmissions(sections, 3).length).toBeGreaterThan(0);
  });

  it('concurrent holders hold distinct permits; the next caller is busy until one frees, and is woken by it', async () => {
    const [a, b] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
    const held = await Promise.all([
      a.acquire('sem:two', { permits: 2 }),
      a.acquire('sem:two', { permits: 2 }),
    ]);
    expect(held.map((lock) => lock.permit).sort()).toEqual([0, 1]);
    expect(await b.tryAcquire('sem:two', { permits: 2 })).toBeNull();
    const busy = await b.acquire('sem:two', { permits: 2, wait: 100 }).catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(LockBusyError);
    const waiting = b.acquire('sem:two', { permits: 2, wait: 10_000 });
    // The waiter is listening for releases of the permits (subscribed on a quorum) before one frees.
    const subscribed = async () => {
      const counts = await Promise.all(
        redisNodes.nodes.map(async (node) => {
          const admin = node.redis();
          try {
            const reply = (await admin.call('PUBSUB', 'NUMSUB', 'redlock:{sem:two}#1:released')) as unknown[];
            return Number(reply[1]);
          } finally {
            admin.disconnect();
          }
        }),
      );
      return counts.filter((count) => count > 0).length >= 2;
    };
    expect(await eventually(subscribed)).toBe(true);
    await held[1].release();
    const third = await waiting;
    expect(third.permit).toBe(held[1].permit);
    expect(b.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
    await Promise.all([third.release(), held[0].release()]);
  });

  it("a crashed holder's permit comes back by expiry on the servers", async () => {
    const crashed = await redlockOn(redisNodes);
    const lock = await crashed.acquire('sem:crash', { permits: 1, ttl: 300 });
    const key = `redlock:{sem:crash}#${lock.permit}`;
    expect(await valuesOnNodes(redisNodes, key)).toEqual([lock.value, lock.value, lock.value]);
    await crashed.quit(); // never released
    const other = await redlockOn(redisNodes);
    expect(await other.tryAcquire('sem:crash', { permits: 1 })).toBeNull();
    const next = await other.acquire('sem:crash', { permits: 1, wait: 2_000 });
    expect(next.permit).toBe(0);
    await next.release();
  });

  it('a caller with another number of permits is refused with a clear error, not a larger limit', async () => {
    const [a, b] = await Promise.all([redlockOn(redisNodes), redlockOn(redisNodes)]);
    const lock = await a.acquire('sem:n', { permits: 2 });
    const error = await b.acquire('sem:n', { permits: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toMatch(
      /Cannot take one of 5 permits of "sem:n": on 127\.0\.0\.1:\d+ 2 permits are recorded there/,
    );
    // Nothing was taken by the refused call: both permits' keys belong to `a` or are free.
    const values = await valuesOnNodes(redisNodes, `redlock:{sem:n}#${1 - lock.permit!}`);
    expect(values).toEqual([null, null, null]);
    await lock.release();
  });

  it('a permit is a lock like any other: extended, auto-extended in using(), fenced per resource', async () => {
    const redlock = await redlockOn(redisNodes, { ttl: 300 });
    const tokens: number[] = [];
    await redlock.using('sem:using', { permits: 2, fencing: true }, async (lock) => {
      tokens.push(lock.fencingToken!);
      await delay(700); // beyond the ttl: renewed
      expect(lock.signal.aborted).toBe(false);
      const inner = await redlock.acquire('sem:using', { permits: 2, fencing: true });
      tokens.push(inner.fencingToken!);
      expect(inner.permit).not.toBe(lock.permit);
      await inner.extend(1_000);
      await inner.release();
    });
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
  });

  it.each([
    [{ permits: 0 }, /permits must be a whole number from 1 to 1000/],
    [{ permits: 1.5 }, /permits must be a whole number from 1 to 1000/],
    [{ permits: 1_001 }, /permits must be a whole number from 1 to 1000/],
    [{ permits: '3' }, /permits must be a whole number.*"3" \(a string\)/],
  ])('refuses %p before any traffic', async (options, message) => {
    const redlock = await redlockOn(redisNodes);
    await expect(redlock.acquire('sem:bad', options as never)).rejects.toThrow(message);
  });

  it('refuses permits over several resources', async () => {
    const redlock = await redlockOn(redisNodes);
    await expect(redlock.acquire(['a', 'b'], { permits: 2 })).rejects.toThrow(
      /permits: 2 takes one resource, got \["a","b"\]/,
    );
  });
});
