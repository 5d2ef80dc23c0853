import { LockBusyError, Redlock } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, delay, redlockOn } from './helpers';

describe('release announcements that never stop (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll, flushAfterEach: false });
  let holder: Redlock;

  beforeAll(async () => {
    holder = await redlockOn(nodes);
  });

  /**
   * Calls by digest that reached node 0: every acquire attempt and every attempt's release (each attempt has
   * its own owner value, so every release goes by digest: DESIGN §7).
   */
  async function acquireCalls(): Promise<number> {
    const admin = nodes.nodes[0].redis();
    try {
      return Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    } finally {
      admin.disconnect();
    }
  }

  it('a waiter makes a bounded number of attempts while a node announces releases every ms (12 measured; 767 before the bound)', async () => {
    const held = await holder.acquire('storm', { ttl: 20_000 });
    const publisher = nodes.nodes[0].redis();
    let running = true;
    let published = 0;
    const storm = (async () => {
      while (running) {
        await publisher.publish('redlock:{storm}:released', '1');
        published++;
        await delay(1);
      }
    })();
    try {
      const waiter = await redlockOn(nodes);
      const before = await acquireCalls();
      const error = (await waiter
        .acquire('storm', { wait: 1_000 })
        .catch((e: unknown) => e)) as LockBusyError;
      const calls = (await acquireCalls()) - before;
      expect(error).toBeInstanceOf(LockBusyError);
      // The storm happened: hundreds of announcements during the wait, and they did wake the waiter.
      expect(published).toBeGreaterThan(200);
      expect(waiter.stats.wokenByRelease).toBeGreaterThan(2);
      // Bounded: gaps from retryDelay (10 ms) doubling up to maxRetryDelay (200 ms) allow about a dozen.
      expect(error.attempts).toBeLessThan(30);
      // Each attempt is an acquire and its release; at the end the writer takes its intent back (one call).
      expect(calls).toBe(error.attempts * 2 + 1);
    } finally {
      running = false;
      await storm;
      publisher.disconnect();
      await held.release();
    }
  });
});
