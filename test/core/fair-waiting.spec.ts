import {
  InvalidArgumentError,
  type Lock,
  MemoryNode,
  Redlock,
  type RedlockOptions,
  memoryNodes,
} from '../../lib';
import { deafNodes } from './helpers';

/**
 * Fair waiting (docs/DESIGN.md §18) on in-memory nodes, each Redlock instance standing for a process of its own:
 * a waiter that came first is granted first, whichever instance it is on — also against a late caller that
 * polls fast where the early one sleeps. Each order test runs with `fair` off as its negative control, where
 * the same schedule lets the late caller in first.
 */
describe('fair waiting', () => {
  const instances: Redlock[] = [];
  let nodes: MemoryNode[];

  function instance(options: RedlockOptions = {}): Redlock {
    const redlock = new Redlock(nodes, { logger: false, owner: `app${instances.length}`, ...options });
    instances.push(redlock);
    return redlock;
  }

  beforeEach(() => {
    nodes = memoryNodes(3);
  });

  afterEach(async () => {
    await Promise.all(instances.splice(0).map((redlock) => redlock.quit()));
    jest.useRealTimers();
  });

  /** Every key the nodes hold now that is not a lock key (tickets, turns, intents), for "nothing left". */
  function queueLeftovers(): string[] {
    return nodes.flatMap((node) => node.keys().filter((key) => /:(queue|intent)/.test(key)));
  }

  /**
   * The holder's lock expires (no release announcement wakes anyone): the early waiter sleeps up to its long
   * retry delay, the late one polls every few ms. Returns who got the lock first.
   */
  async function afterExpiry(fair: boolean): Promise<string[]> {
    jest.useFakeTimers();
    const holder = instance();
    const early = instance({ fair, retryDelay: 100, maxRetryDelay: 400 });
    const late = instance({ fair, retryDelay: 5, maxRetryDelay: 5 });
    await holder.acquire('r', { ttl: 1_000 });
    const order: string[] = [];
    const take = (name: string, redlock: Redlock) =>
      redlock.acquire('r', { ttl: 1_000, wait: 10_000 }).then(async (lock: Lock) => {
        order.push(name);
        await lock.release();
      });
    const first = take('early', early);
    await jest.advanceTimersByTimeAsync(50);
    const second = take('late', late);
    await jest.advanceTimersByTimeAsync(3_000);
    await Promise.all([first, second]);
    expect(queueLeftovers()).toEqual([]);
    return order;
  }

  it('a lock that expired goes to the waiter that came first, not to the one polling fastest', async () => {
    expect(await afterExpiry(true)).toEqual(['early', 'late']);
  });

  /**
   * A waiter that hears no release announcements retries on its backoff; a newcomer calls at the moment of the
   * release, 50 ms in, between two of the waiter's attempts. Returns who got the lock first.
   */
  async function bargedAtRelease(fair: boolean): Promise<string[]> {
    jest.useFakeTimers();
    const holder = instance();
    const lock = await holder.acquire('r', { ttl: 10_000 });
    const order: string[] = [];
    const take = (name: string, redlock: Redlock) =>
      redlock.acquire('r', { wait: 10_000 }).then(async (granted: Lock) => {
        order.push(name);
        await granted.release();
      });
    // The waiter hears no release announcements (a user denied SUBSCRIBE): it retries on its backoff.
    const deaf = deafNodes(nodes);
    const waiter = new Redlock(deaf, { logger: false, fair, retryDelay: 100, maxRetryDelay: 200 });
    instances.push(waiter);
    const first = take('waiter', waiter);
    await jest.advanceTimersByTimeAsync(50);
    await lock.release();
    const second = take('newcomer', instance({ fair }));
    await jest.advanceTimersByTimeAsync(3_000);
    await Promise.all([first, second]);
    expect(queueLeftovers()).toEqual([]);
    return order;
  }

  it('a newcomer arriving at the release waits behind the waiter that came first', async () => {
    expect(await bargedAtRelease(true)).toEqual(['waiter', 'newcomer']);
  });

  it('negative control: without fair waiting the newcomer at the release goes first', async () => {
    expect(await bargedAtRelease(false)).toEqual(['newcomer', 'waiter']);
  });

  it('inspect() shows the waiters in arrival order on every node, and the longest wait', async () => {
    jest.useFakeTimers();
    const holder = instance();
    const lock = await holder.acquire('r', { ttl: 10_000 });
    const waiting = ['w1', 'w2', 'w3'].map((name, i) => ({
      name,
      redlock: instance({ fair: true, owner: name }),
      i,
    }));
    // Each waiter learns its place (the `waiting` event), and later that it moved up.
    const places: [string, number][] = [];
    for (const { name, redlock } of waiting)
      redlock.on('waiting', ({ position }) => places.push([name, position]));
    const calls: Promise<Lock>[] = [];
    for (const waiter of waiting) {
      calls.push(waiter.redlock.acquire('r', { wait: 20_000 }));
      await jest.advanceTimersByTimeAsync(30);
    }
    const view = await holder.inspect('r');
    expect(view.waiting?.count).toBe(3);
    expect(places).toEqual([
      ['w1', 1],
      ['w2', 2],
      ['w3', 3],
    ]);
    expect(view.waiting?.oldestWait).toBeGreaterThanOrEqual(89);
    for (const node of view.nodes) expect(node.waiters?.map((w) => w.owner)).toEqual(['w1', 'w2', 'w3']);
    await lock.release();
    const order: string[] = [];
    for (const [i, call] of calls.entries()) {
      await jest.advanceTimersByTimeAsync(50);
      const granted = await call;
      order.push(waiting[i].name);
      expect((await holder.inspect('r')).waiting?.count ?? 0).toBe(2 - i);
      await granted.release();
    }
    expect(order).toEqual(['w1', 'w2', 'w3']);
    // w3 moved up to 2 once w1 had the lock, then to 1 (attempts refused during w2's turn or hold).
    expect(places.filter(([name]) => name === 'w3').map(([, place]) => place)).toEqual([3, 2, 1]);
    expect(queueLeftovers()).toEqual([]);
  });

  it('a waiter that gives up or is aborted takes its ticket back; the next one is not held up', async () => {
    jest.useFakeTimers();
    const holder = instance();
    const lock = await holder.acquire('r', { ttl: 10_000 });
    const quitter = instance({ fair: true }).acquire('r', { wait: 500 });
    const quitting = expect(quitter).rejects.toThrow(/held by another owner/);
    await jest.advanceTimersByTimeAsync(10);
    const aborter = new AbortController();
    const aborted = instance({ fair: true }).acquire('r', { wait: 20_000, signal: aborter.signal });
    const aborting = expect(aborted).rejects.toThrow(/aborted/i);
    await jest.advanceTimersByTimeAsync(10);
    const patient = instance({ fair: true }).acquire('r', { wait: 20_000 });
    await jest.advanceTimersByTimeAsync(600);
    await quitting;
    aborter.abort();
    await aborting;
    expect((await holder.inspect('r')).waiting?.count).toBe(1);
    await lock.release();
    await jest.advanceTimersByTimeAsync(50);
    await (await patient).release();
    expect(queueLeftovers()).toEqual([]);
  });

  it("a crashed waiter's ticket expires: the lock goes on to the next one", async () => {
    jest.useFakeTimers();
    const holder = instance();
    const lock = await holder.acquire('r', { ttl: 10_000 });
    // The waiter's process dies after its first attempt: its nodes never hear from it again (SIGKILL).
    let dead = false;
    const links = nodes.map(
      (node) =>
        new Proxy(node, {
          get(target, property, receiver) {
            const value: unknown = Reflect.get(target, property, receiver);
            if (typeof value !== 'function' || property === 'close') return value;
            return (...args: unknown[]) =>
              dead
                ? new Promise(() => undefined)
                : (value as (...a: unknown[]) => unknown).apply(target, args);
          },
        }),
    );
    const crashed = new Redlock(links, { logger: false, fair: true, maxRetryDelay: 100, nodeTimeout: 20 });
    void crashed.acquire('r', { wait: 60_000 }).catch(() => undefined);
    await jest.advanceTimersByTimeAsync(20);
    expect((await holder.inspect('r')).waiting?.count).toBe(1);
    dead = true;
    const next = instance({ fair: true }).acquire('r', { wait: 20_000 });
    await jest.advanceTimersByTimeAsync(20);
    await lock.release();
    await jest.advanceTimersByTimeAsync(2_000);
    await expect(next).resolves.toBeDefined();
    // Its ticket was the oldest, and it never came back: it expired (the intent's ttl, 400 ms here).
    expect((await holder.inspect('r')).waiting).toBeUndefined();
    // Its retries (failing) run on the fake clock: quit it while the clock moves.
    const quitting = crashed.quit();
    await jest.advanceTimersByTimeAsync(5_000);
    await quitting;
  });

  it('a grant by a minority of nodes keeps the waiter first: with a node down it still gets the lock at once', async () => {
    jest.useFakeTimers();
    nodes = memoryNodes(5);
    nodes[4].down = true; // four answer, the quorum is 3
    const holder = instance();
    const lock = await holder.acquire('r', { ttl: 10_000 });
    const order: string[] = [];
    const take = (name: string, redlock: Redlock) =>
      redlock.acquire('r', { wait: 5_000 }).then(async (granted: Lock) => {
        order.push(`${name} +${Date.now() - releasedAt}`);
        await granted.release();
      });
    let releasedAt = 0;
    // w1 retries a split 4.5 ms later (random 0.9 of its 5 ms): the rest of the release lands before that.
    const w1 = new Redlock(nodes, { logger: false, owner: 'w1', fair: true }, { random: () => 0.9 });
    instances.push(w1);
    const first = take('w1', w1);
    await jest.advanceTimersByTimeAsync(20);
    // w2 hears no announcements and retries seldom: it does not try while the release lands.
    const deaf = deafNodes(nodes);
    const w2 = new Redlock(deaf, {
      logger: false,
      owner: 'w2',
      fair: true,
      retryDelay: 300,
      maxRetryDelay: 300,
    });
    instances.push(w2);
    const second = take('w2', w2);
    await jest.advanceTimersByTimeAsync(20);
    // The release lands on nodes 0 and 1 first: w1 is granted there and refused by 2 and 3 — two of five.
    for (const i of [0, 1]) await nodes[i].release(lock.keys, lock.value);
    await jest.advanceTimersByTimeAsync(1);
    expect(order).toEqual([]);
    // The scenario: those two grants took w1's ticket out there (w2's alone left), not on nodes 2 and 3.
    const tickets = (node: MemoryNode) =>
      node
        .inspect(['redlock:{r}:queue'])
        .then(({ keys: [queue] }) => (queue.type === 'zset' ? queue.count : 0));
    expect(await Promise.all(nodes.slice(0, 4).map(tickets))).toEqual([1, 1, 2, 2]);
    for (const i of [2, 3]) await nodes[i].release(lock.keys, lock.value);
    releasedAt = Date.now();
    await jest.advanceTimersByTimeAsync(5_000);
    await Promise.all([first, second]);
    // w1 first, within a few retries; the nodes that granted it alone must not have passed its turn to w2.
    expect(order.map((entry) => entry.split(' ')[0])).toEqual(['w1', 'w2']);
    expect(Number(order[0].split('+')[1])).toBeLessThan(50);
    expect(queueLeftovers()).toEqual([]);
  });

  it('[a, b] and [b, a] waiting fairly do not stall each other', async () => {
    jest.useFakeTimers();
    const holder = instance();
    const lock = await holder.acquire(['a', 'b'], { ttl: 10_000 });
    const ab = instance({ fair: true }).acquire(['a', 'b'], { wait: 20_000 });
    await jest.advanceTimersByTimeAsync(10);
    const ba = instance({ fair: true }).acquire(['b', 'a'], { wait: 20_000 });
    await jest.advanceTimersByTimeAsync(10);
    await lock.release();
    const first = await ab;
    await first.release();
    await (await ba).release();
    expect(queueLeftovers()).toEqual([]);
  });

  it('fair is refused where it cannot apply, and must be a boolean', async () => {
    const redlock = instance();
    await expect(redlock.acquire('r', { fair: true, permits: 2 })).rejects.toThrow(InvalidArgumentError);
    await expect(redlock.acquire('r', { fair: true, mode: 'read' })).rejects.toThrow(
      /readers already let a waiting writer/,
    );
    await expect(redlock.acquire('r', { fair: 'yes' as never })).rejects.toThrow(/fair/);
    expect(() => instance({ fair: 1 as never })).toThrow(InvalidArgumentError);
    // The instance's default applies where it can: a fair instance still takes readers and permits.
    const fair = instance({ fair: true });
    await (await fair.acquire('p', { permits: 2 })).release();
    await (await fair.acquire('q', { mode: 'read' })).release();
  });
});
