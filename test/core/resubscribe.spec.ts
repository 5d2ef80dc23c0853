import { type LockNode, Redlock, memoryNodes } from '../../lib';

/**
 * A waiter whose release subscription failed (a confirmation too late on a loaded host) subscribes again a
 * second later, instead of polling for the rest of its wait: the release then wakes it. The negative control
 * keeps every subscription failing: the waiter can only be woken by its timer.
 */
describe('a waiter subscribes again after its subscription failed', () => {
  afterEach(() => jest.useRealTimers());

  async function wakes(failures: number): Promise<{ byRelease: number; byTimer: number }> {
    jest.useFakeTimers();
    const nodes = memoryNodes(3);
    let refused = 0;
    const flaky = nodes.map(
      (node) =>
        new Proxy(node, {
          get(target, property, receiver) {
            const value: unknown = Reflect.get(target, property, receiver);
            if (property !== 'watch') return value;
            return (...args: Parameters<NonNullable<LockNode['watch']>>) =>
              refused++ < failures * nodes.length
                ? Promise.reject(new Error('subscription not confirmed in time'))
                : (value as NonNullable<LockNode['watch']>).apply(target, args);
          },
        }),
    );
    const holder = new Redlock(nodes, { logger: false });
    const waiter = new Redlock(flaky, { logger: false });
    const lock = await holder.acquire('r', { ttl: 30_000 });
    const waiting = waiter.acquire('r', { wait: 60_000 });
    await jest.advanceTimersByTimeAsync(3_000);
    await lock.release();
    await jest.advanceTimersByTimeAsync(2_000);
    await (await waiting).release();
    const stats = { byRelease: waiter.stats.wokenByRelease, byTimer: waiter.stats.wokenByTimer };
    const quitting = Promise.all([holder.quit(), waiter.quit()]);
    await jest.advanceTimersByTimeAsync(5_000);
    await quitting;
    return stats;
  }

  it('one failed subscription: a second later it subscribes again, and the release wakes it', async () => {
    expect((await wakes(1)).byRelease).toBe(1);
  });

  it('negative control: subscriptions that always fail leave it to its timer', async () => {
    const { byRelease, byTimer } = await wakes(1_000);
    expect(byRelease).toBe(0);
    expect(byTimer).toBeGreaterThan(0);
  });
});
