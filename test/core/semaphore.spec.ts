import { InvalidArgumentError, LockBusyError } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';

describe('counting semaphores: { permits: n } over the quorum (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  // Holders working random whiles under contention (never more than n at once, tokens per permit, the limit
  // reached) and the checker's negative control, a waiter woken by a release, a permit renewed past its ttl:
  // semaphore-timing.spec.ts (virtual clock).

  it('concurrent holders hold distinct permits; the next caller is busy until one frees, then takes it', async () => {
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
    await held[1].release();
    const third = await waiting;
    expect(third.permit).toBe(held[1].permit);
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

  it('a permit is a lock like any other: extended, held in using(), fenced per resource', async () => {
    const redlock = await redlockOn(redisNodes, { ttl: 300 });
    const tokens: number[] = [];
    await redlock.using('sem:using', { permits: 2, fencing: true }, async (lock) => {
      tokens.push(lock.fencingToken!);
      // Renewed beyond its ttl: semaphore-timing.spec.ts (virtual clock).
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
