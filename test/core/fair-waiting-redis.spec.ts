import { type Lock, type LockNode, Redlock } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

/**
 * Fair waiting (docs/DESIGN.md §18) on 3 real nodes: the acquire script's queue, turn and tickets as Redis runs
 * them. A waiter that hears no release announcements retries on its backoff; a newcomer asks the moment the
 * lock is released, between two of the waiter's attempts. Fair, the waiter goes first; unfair (the negative
 * control), the newcomer does. Either way nothing of the queue stays on the nodes.
 */
describe('fair waiting on real nodes', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });

  /** The instance's nodes without release announcements, resolving `answered` once a quorum answered once. */
  function deafWaiter(
    nodes: readonly LockNode[],
    fair: boolean,
  ): { redlock: Redlock; answered: Promise<void> } {
    let answers = 0;
    let done!: () => void;
    const answered = new Promise<void>((resolve) => (done = resolve));
    const wrapped = nodes.map(
      (node) =>
        new Proxy(node, {
          get(target, property, receiver) {
            if (property === 'watch') return undefined;
            if (property === 'close') return undefined; // the instance that created the node closes it
            const value: unknown = Reflect.get(target, property, receiver);
            if (property !== 'acquire' || typeof value !== 'function') return value;
            return (...args: unknown[]) =>
              (value as (...a: unknown[]) => Promise<unknown>).apply(target, args).finally(() => {
                if (++answers === 2) done();
              });
          },
        }),
    );
    const redlock = new Redlock(wrapped, {
      logger: false,
      restartGuard: false,
      fair,
      retryDelay: 100,
      maxRetryDelay: 200,
    });
    return { redlock, answered };
  }

  async function leftovers(): Promise<string[]> {
    const found: string[] = [];
    for (const node of redisNodes.nodes) {
      const admin = node.redis();
      try {
        found.push(...(await admin.keys('*:queue*')), ...(await admin.keys('*:intent')));
      } finally {
        admin.disconnect();
      }
    }
    return found;
  }

  async function newcomerAtRelease(fair: boolean): Promise<string[]> {
    const holder = await redlockOn(redisNodes);
    const newcomer = await redlockOn(redisNodes, { fair });
    const waiter = deafWaiter(holder.nodes, fair);
    const lock = await holder.acquire('r', { ttl: 10_000 });
    const order: string[] = [];
    const take = (name: string, redlock: Redlock) =>
      redlock.acquire('r', { wait: 5_000 }).then(async (granted: Lock) => {
        order.push(name);
        await granted.release();
      });
    const first = take('waiter', waiter.redlock);
    await waiter.answered;
    if (fair) {
      const view = await holder.inspect('r');
      expect(view.waiting?.count).toBe(1);
      expect(view.nodes.map((node) => node.waiters?.length)).toEqual([1, 1, 1]);
    }
    await lock.release();
    const second = take('newcomer', newcomer);
    await Promise.all([first, second]);
    await waiter.redlock.quit();
    expect(await leftovers()).toEqual([]);
    return order;
  }

  it('the waiter that came first is granted first, also against a newcomer at the release', async () => {
    expect(await newcomerAtRelease(true)).toEqual(['waiter', 'newcomer']);
  });

  it('negative control: without fair waiting the newcomer at the release goes first', async () => {
    expect(await newcomerAtRelease(false)).toEqual(['newcomer', 'waiter']);
  });

  it('five instances waiting fairly are granted in the order they came', async () => {
    const holder = await redlockOn(redisNodes);
    const lock = await holder.acquire('line', { ttl: 10_000 });
    const names = ['a', 'b', 'c', 'd', 'e'];
    const instances = await Promise.all(names.map((owner) => redlockOn(redisNodes, { fair: true, owner })));
    const order: string[] = [];
    const calls: Promise<void>[] = [];
    const lastPlaces: number[] = [];
    instances[4].on('waiting', ({ position }) => lastPlaces.push(position));
    for (const [i, redlock] of instances.entries()) {
      calls.push(
        redlock.acquire('line', { wait: 10_000 }).then(async (granted: Lock) => {
          order.push(names[i]);
          await granted.release();
        }),
      );
      // The next one comes once this one's ticket is on every node: arrival order is known.
      for (;;) {
        const view = await holder.inspect('line');
        if (view.nodes.every((node) => (node.waiters?.length ?? 0) === i + 1)) break;
      }
    }
    await lock.release();
    await Promise.all(calls);
    expect(order).toEqual(names);
    // The last one learnt it was fifth, and moved up (not necessarily by every step: it attempts on wake-ups).
    // A place may come back up by one for a moment: the waiter ahead, granted on two nodes, is still queued on
    // the third until its clear-intent (not awaited by the grant) lands there, and a refusal answered by one
    // node of each kind reads the later place (the quorum's).
    expect(lastPlaces[0]).toBe(5);
    expect(lastPlaces.filter((place, i) => i > 0 && place > lastPlaces[i - 1] + 1)).toEqual([]);
    expect(Math.min(...lastPlaces)).toBeLessThan(5);
    expect(await leftovers()).toEqual([]);
  });
});
