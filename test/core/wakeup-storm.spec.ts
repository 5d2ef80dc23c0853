import { LockBusyError } from '../../lib';
import { RedlockCore } from '../../lib/core';
import { NodeCalls } from './node-calls';
import { VirtualClock } from './virtual-clock';
import { AnnouncingNode } from './announcing-node';

/**
 * The bound on attempts that release announcements can trigger (ReleaseWaiter's gaps): timing policy, decided
 * on a virtual clock over three in-memory nodes that announce releases (it slept on the real clock over real
 * nodes before, a publisher announcing every ms; wakeup.spec.ts shows announcements over real pub/sub).
 */
describe('release announcements that never stop (virtual clock, 3 in-memory nodes)', () => {
  it('a waiter makes a bounded number of attempts while a node announces releases every ms (12 measured; 767 before the bound)', async () => {
    const clock = new VirtualClock();
    const nodes = ['a', 'b', 'c'].map((name) => new AnnouncingNode(`${name}:1`, clock));
    const core = () => new RedlockCore(nodes, { logger: false, restartGuard: false }, { clock });
    const holder = core();
    const held = await holder.acquire('storm', { ttl: 20_000 });
    let running = true;
    let published = 0;
    // Node 0 announces a release of the key every ms, although its holder keeps it.
    const storm = () => {
      if (!running) return;
      nodes[0].announce('redlock:{storm}');
      published++;
      clock.setTimeout(storm, 1);
    };
    storm();
    try {
      const waiter = core();
      const calls = new NodeCalls(waiter.nodes);
      const pending = waiter.acquire('storm', { wait: 1_000 }).catch((e: unknown) => e);
      await clock.advance(1_100);
      const error = (await pending) as LockBusyError;
      // Every acquire attempt and every attempt's release node 0 answered, and the intent taken back.
      const callsOnNode0 = calls.calls.filter((call) => call.node === 0 && call.method !== 'watch').length;
      expect(error).toBeInstanceOf(LockBusyError);
      // The storm happened: hundreds of announcements during the wait, and they did wake the waiter.
      expect(published).toBeGreaterThan(200);
      expect(waiter.stats.wokenByRelease).toBeGreaterThan(2);
      // Bounded: gaps from retryDelay (10 ms) doubling up to maxRetryDelay (200 ms) allow about a dozen.
      expect(error.attempts).toBeLessThan(30);
      // Each attempt is an acquire and its release; at the end the writer takes its intent back (one call).
      expect(callsOnNode0).toBe(error.attempts * 2 + 1);
    } finally {
      running = false;
      await held.release();
    }
  });
});
