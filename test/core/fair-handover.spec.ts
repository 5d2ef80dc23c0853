import {
  type Lock,
  type LockNode,
  type MemoryNode,
  Redlock,
  type RedlockOptions,
  memoryNodes,
} from '../../lib';
import type { ReleaseListener } from '../../lib/core';
import { ReleaseWaiter } from '../../lib/core/acquire/release-waiter';
import { quitOnFakeClock } from './helpers';

/**
 * Fair waiting's hand-over (docs/DESIGN.md §18) when a release reaches the nodes one after another: the waiter
 * first in line hears the first node's announcement and tries while the other nodes still have the holder — a
 * split vote. Nobody else may take the lock meanwhile (it is that waiter's turn), so its split backoff, deaf to
 * announcements, would leave the lock idle: it retries soon instead, woken by the other nodes' announcements.
 * On Jest's fake clock, over in-memory nodes; `fair: false` (the usual split backoff) is the negative control.
 */
describe('fair waiting: the hand-over after a release that reaches the nodes apart', () => {
  const instances: Redlock[] = [];
  let nodes: MemoryNode[];

  afterEach(() => quitOnFakeClock(instances));

  function instance(options: RedlockOptions): Redlock {
    // A split backoff that is always half its range: the control's figure does not depend on chance.
    const redlock = new Redlock(nodes, { logger: false, ...options }, { random: () => 0.5 });
    instances.push(redlock);
    return redlock;
  }

  /** How long (virtual ms) after the release reached the last node the waiter held the lock. */
  async function handover(fair: boolean): Promise<{ after: number; splitFirst: boolean }> {
    jest.useFakeTimers();
    nodes = memoryNodes(3);
    const holder = instance({});
    const waiter = instance({ fair, retryDelay: 100, maxRetryDelay: 400 });
    const held = await holder.acquire('r', { ttl: 10_000 });
    let granted: number | undefined;
    const waiting = waiter.acquire('r', { wait: 10_000 }).then((lock: Lock) => {
      granted = Date.now();
      return lock;
    });
    await jest.advanceTimersByTimeAsync(50); // refused, subscribed, asleep until an announcement
    const asked = jest.spyOn(nodes[1], 'acquire');
    // The release reaches node 0 first: its announcement wakes the waiter, which wins node 0 only.
    await nodes[0].release(held.keys, held.value);
    await jest.advanceTimersByTimeAsync(1);
    // It tried (node 1 was asked, and still had the holder) and did not get the lock: a split vote.
    const splitFirst = asked.mock.calls.length === 1 && granted === undefined;
    asked.mockRestore();
    // ...and the other two nodes a moment later.
    await jest.advanceTimersByTimeAsync(1);
    await Promise.all([nodes[1].release(held.keys, held.value), nodes[2].release(held.keys, held.value)]);
    const releasedAt = Date.now();
    await jest.advanceTimersByTimeAsync(1_000);
    const lock = await waiting;
    await lock.release();
    return { after: granted! - releasedAt, splitFirst };
  }

  it('the waiter first in line takes the lock within a few ms of the last node’s release', async () => {
    const { after, splitFirst } = await handover(true);
    expect(splitFirst).toBe(true); // the first try after node 0's announcement did not get the lock
    expect(after).toBeLessThanOrEqual(5);
  });

  it('negative control: without fair waiting the split backoff (50–100 ms here) leaves the lock idle', async () => {
    const { after, splitFirst } = await handover(false);
    expect(splitFirst).toBe(true);
    expect(after).toBeGreaterThanOrEqual(40);
  });

  /**
   * A fair waiter woken by a release that finds the lock in another waiter's turn (refused "an earlier waiter's
   * turn") lost nothing to a storm: its next wake must not be held back by the gap that repeated false wakes
   * earn, or it would sleep through its own turn when it comes. A refusal that was no turn (the control) earns
   * the gap as before.
   */
  it("refusals for an earlier waiter's turn earn no quiet gap; other announcement-woken refusals do", async () => {
    jest.useFakeTimers(); // as the other tests here (afterEach); the waiter runs on its own clock below
    let now = 0;
    const clock = { now: () => now, setTimeout: () => ({ cancel: () => undefined }) };
    const gapAfter = async (turnOfAnother: boolean): Promise<number> => {
      let announce: ReleaseListener | undefined;
      const node = {
        watch: async (_keys: readonly string[], listener: ReleaseListener) => {
          announce = listener;
          return () => undefined;
        },
      } as unknown as LockNode;
      const waiter = new ReleaseWaiter([node], clock, ['k']);
      await waiter.subscribe();
      const sleeping = waiter.sleep(1_000, undefined, true);
      announce!('released'); // woken by a release...
      await sleeping;
      now += 1;
      waiter.failedAttempt(10, 200, 50, turnOfAnother); // ...and refused
      waiter.close();
      return waiter.quietFor;
    };
    expect(await gapAfter(true)).toBe(0);
    expect(await gapAfter(false)).toBe(10);
  });
});
