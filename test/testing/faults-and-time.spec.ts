import { InvalidArgumentError, LockLostError, QuorumUnavailableError, Redlock, memoryNodes } from '../../lib';
import { useMemoryNodes } from './helpers';

/**
 * In-memory nodes under faults a test asks for (pause, down, lost data) and under Jest's fake timers, which
 * move the nodes' time (`Date.now()`) and the core's (`performance.now()`) together; their refusal in
 * production; and nothing left running after `quit()`.
 */
describe('memoryNodes(): faults, fake timers, production, open handles', () => {
  const { nodes, use, instance } = useMemoryNodes(() => jest.useRealTimers());

  describe('faults', () => {
    it('two paused nodes of three: acquire is unavailable after the node timeout; resumed, it works', async () => {
      jest.useFakeTimers();
      const redlock = instance({ nodeTimeout: 50 });
      nodes[0].pause();
      nodes[1].pause();
      const error = await onFakeTime(redlock.acquire('paused', { wait: 0 }).catch((e: unknown) => e));
      expect(error).toBeInstanceOf(QuorumUnavailableError);
      expect(String(error)).toMatch(/memory-1/);
      nodes[0].resume();
      nodes[1].resume();
      // The late answers ran on resume and were undone; the resource is free.
      const lock = await redlock.acquire('paused', { wait: 0 });
      await lock.release();
    });

    it('two nodes down: acquire fails at once as unavailable, naming the nodes', async () => {
      const redlock = instance();
      nodes[1].down = true;
      nodes[2].down = true;
      const error = await redlock.acquire('down', { wait: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(QuorumUnavailableError);
      expect(String(error)).toMatch(/memory-2 is down/);
      nodes[1].down = false;
      const lock = await redlock.acquire('down', { wait: 0 });
      await lock.release();
    });

    it('data lost on two nodes: another instance takes the lock, and the holder finds it lost', async () => {
      const a = instance();
      const b = instance();
      const lock = await a.acquire('fragile', { ttl: 10_000 });
      nodes[0].loseData();
      nodes[1].loseData();
      const thief = await b.tryAcquire('fragile');
      expect(thief).not.toBeNull();
      await expect(lock.extend()).rejects.toBeInstanceOf(LockLostError);
      await thief!.release();
    });

    it('with restartGuard: true, a node that lost its data refuses new locks for the guard window', async () => {
      use(memoryNodes(3, { restartGuard: true }));
      jest.useFakeTimers();
      const redlock = instance({ restartGuard: 1_000, ttl: 500 });
      // Fresh nodes count as just started: refused until they have been up for the window.
      expect(await redlock.tryAcquire('guarded').catch((e: unknown) => e)).toBeInstanceOf(
        QuorumUnavailableError,
      );
      jest.advanceTimersByTime(2_000);
      const lock = await redlock.acquire('guarded', { wait: 0 });
      await lock.release();
      nodes[0].loseData();
      nodes[1].loseData();
      expect(await redlock.tryAcquire('guarded').catch((e: unknown) => e)).toBeInstanceOf(
        QuorumUnavailableError,
      );
    });
  });

  describe('fake timers', () => {
    it('Date.now() and performance.now() move together', () => {
      jest.useFakeTimers();
      const [date, perf] = [Date.now(), performance.now()];
      jest.advanceTimersByTime(12_345);
      expect(Date.now() - date).toBe(12_345);
      expect(performance.now() - perf).toBe(12_345);
    });

    it('advancing the ttl expires the lock: the validity first, the node keys a millisecond later', async () => {
      jest.useFakeTimers();
      const a = instance();
      const b = instance();
      const lock = await a.acquire('timed', { ttl: 1_000 });
      const key = 'redlock:{timed}';
      // Whenever the holder counts its lock valid, every node holds it.
      for (let t = 0; t < 1_000; t += 100) {
        if (!lock.isExpired) expect(nodes.map((node) => node.peek(key))).toEqual(Array(3).fill(lock.value));
        jest.advanceTimersByTime(100);
      }
      expect(lock.isExpired).toBe(true);
      expect(lock.remainingTime).toBeLessThanOrEqual(0);
      // Redis keeps a key through the last millisecond of its ttl, and so do the nodes.
      expect(await b.tryAcquire('timed')).toBeNull();
      jest.advanceTimersByTime(1);
      expect(nodes.map((node) => node.peek(key))).toEqual(Array(3).fill(undefined));
      const next = await b.tryAcquire('timed');
      expect(next).not.toBeNull();
      await next!.release();
    });

    it('a waiter retries on the fake clock and gets the lock once the holder expires', async () => {
      jest.useFakeTimers();
      const a = instance();
      const b = instance();
      await a.acquire('expiring', { ttl: 1_000 });
      const waiting = b.acquire('expiring', { wait: 5_000 });
      await jest.advanceTimersByTimeAsync(1_500);
      const lock = await waiting;
      expect(lock.remainingTime).toBeGreaterThan(900);
      await lock.release();
    });

    it('renews held locks in batches (extendMany) while fake time passes', async () => {
      jest.useFakeTimers();
      const redlock = instance();
      const batches = jest.spyOn(nodes[0], 'extendMany');
      const locks = await Promise.all(
        Array.from({ length: 5 }, (_, i) => redlock.acquire(`job:${i}`, { ttl: 3_000 })),
      );
      const stops = locks.map((lock) => redlock.keepAlive(lock));
      await jest.advanceTimersByTimeAsync(10_000);
      expect(locks.every((lock) => !lock.isExpired)).toBe(true);
      expect(batches.mock.calls.some(([items]) => items.length === 5)).toBe(true);
      stops.forEach((stop) => stop());
      await Promise.all(locks.map((lock) => lock.release()));
    });

    it('on real timers too, the validity never outlasts the nodes', async () => {
      const lock = await instance().acquire('real', { ttl: 5_000 });
      const readings = await Promise.all(nodes.map((node) => node.inspect(['redlock:{real}'])));
      const remaining = lock.remainingTime;
      for (const { keys } of readings) {
        const [reading] = keys;
        expect(reading.type === 'string' && reading.pttl).toBeGreaterThanOrEqual(remaining);
      }
      await lock.release();
    });
  });

  describe('never in production by accident', () => {
    const saved = process.env.NODE_ENV;
    afterEach(() => {
      process.env.NODE_ENV = saved;
    });

    it('refuses under NODE_ENV=production, saying why and how to opt in', () => {
      process.env.NODE_ENV = 'production';
      expect(() => memoryNodes()).toThrow(InvalidArgumentError);
      expect(() => memoryNodes()).toThrow(/exclude nothing across processes.*allowInProduction: true/);
      expect(memoryNodes(1, { allowInProduction: true })).toHaveLength(1);
    });

    it('refuses a wrong count or option', () => {
      expect(() => memoryNodes(0)).toThrow(/count must be a whole number from 1 to 99/);
      expect(() => memoryNodes(3, { allowInProduktion: true } as never)).toThrow(
        /unknown option "allowInProduktion"/,
      );
      expect(() => memoryNodes(3, { restartGuard: 'yes' } as never)).toThrow(
        /restartGuard must be a boolean/,
      );
    });
  });

  it('leaves no open handle once quit() resolved', async () => {
    const before = process.getActiveResourcesInfo().sort();
    const redlock = new Redlock(memoryNodes(), { logger: false });
    await redlock.connect();
    await redlock.using('handles', async () => undefined);
    const held = await redlock.acquire('handles:2', { ttl: 60_000 });
    void held;
    await redlock.quit();
    expect(process.getActiveResourcesInfo().sort()).toEqual(before);
  });
});

/** Settles `promise`, advancing Jest's fake timers 10 ms at a time meanwhile (at most `limit` ms). */
async function onFakeTime<T>(promise: Promise<T>, limit = 60_000): Promise<T> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (let elapsed = 0; !settled && elapsed < limit; elapsed += 10) await jest.advanceTimersByTimeAsync(10);
  return promise;
}
