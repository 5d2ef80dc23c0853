import { type Lock, MemoryNode, Redlock, memoryNodes } from '../../lib';
import { deafNodes, quitOnFakeClock } from './helpers';

/** One call of a worker: when it came, when it got the lock. */
interface Call {
  readonly worker: string;
  readonly came: number;
  granted: number;
}

/**
 * For each call, how many calls that came after it were granted before it (while it waited): the bypass count.
 * Returns the largest over all calls, and how many calls were overtaken at all.
 */
export function bypasses(calls: readonly Call[]): { max: number; overtaken: number } {
  let max = 0;
  let overtaken = 0;
  for (const call of calls) {
    const count = calls.filter((other) => other.came > call.came && other.granted < call.granted).length;
    max = Math.max(max, count);
    if (count > 0) overtaken++;
  }
  return { max, overtaken };
}

/**
 * Bounded bypass (docs/DESIGN.md §18), as a property over many grants: instances standing for processes loop
 * (acquire, release, again) on one hot lock over in-memory nodes (which agree on the order: one queue each), on
 * Jest's fake clock; a third of them hear no release announcements and poll. With fair waiting no call is overtaken by more than
 * K calls that came after it; the same run without it (the negative control) overtakes far more.
 */
describe('fair waiting: bounded bypass over many grants', () => {
  /** The bound stated in docs/DESIGN.md §18 for nodes that agree on the order. */
  const K = 1;
  const instances: Redlock[] = [];
  let nodes: MemoryNode[];

  afterEach(() => quitOnFakeClock(instances));

  async function contend(fair: boolean): Promise<Call[]> {
    jest.useFakeTimers();
    nodes = memoryNodes(3);
    const deaf = deafNodes(nodes);
    const calls: Call[] = [];
    const loops: Promise<void>[] = [];
    for (let i = 0; i < 6; i++) {
      const redlock = new Redlock(i % 3 === 0 ? deaf : nodes, {
        logger: false,
        fair,
        retryDelay: 5 + 20 * (i % 3),
        maxRetryDelay: 40 + 60 * (i % 3),
      });
      instances.push(redlock);
      loops.push(
        (async () => {
          for (let round = 0; round < 25; round++) {
            const call: Call = { worker: `i${i}`, came: Date.now(), granted: Infinity };
            calls.push(call);
            const lock: Lock = await redlock.acquire('hot', { ttl: 1_000, wait: 60_000 });
            call.granted = Date.now() + calls.indexOf(call) / 1e6;
            await lock.release();
          }
        })(),
      );
    }
    const all = Promise.all(loops);
    for (
      let spent = 0;
      spent < 600_000 && calls.filter((c) => c.granted === Infinity).length > 0;
      spent += 1_000
    ) {
      await jest.advanceTimersByTimeAsync(1_000);
      if (calls.length === 150 && calls.every((c) => c.granted !== Infinity)) break;
    }
    await all;
    return calls;
  }

  it(`150 grants among 6 instances: no call overtaken by more than ${K} later ones`, async () => {
    const calls = await contend(true);
    expect(calls).toHaveLength(150);
    const { max, overtaken } = bypasses(calls);
    expect(max).toBeLessThanOrEqual(K);
    console.log(`fair: largest bypass ${max}, calls overtaken ${overtaken} of 150`);
  });

  it('negative control: without fair waiting, calls are overtaken by many later ones', async () => {
    const calls = await contend(false);
    const { max, overtaken } = bypasses(calls);
    console.log(`unfair: largest bypass ${max}, calls overtaken ${overtaken} of 150`);
    expect(max).toBeGreaterThan(3 * K);
  });

  it('the checker counts what it says (a planted order)', () => {
    const planted: Call[] = [
      { worker: 'a', came: 0, granted: 40 },
      { worker: 'b', came: 1, granted: 10 },
      { worker: 'c', came: 2, granted: 20 },
      { worker: 'd', came: 3, granted: 30 },
    ];
    expect(bypasses(planted)).toEqual({ max: 3, overtaken: 1 });
    expect(bypasses(planted.map((call, i) => ({ ...call, granted: i })))).toEqual({ max: 0, overtaken: 0 });
  });

  it('nodes that disagree on the order still hand the lock over within two turns', async () => {
    jest.useFakeTimers();
    nodes = memoryNodes(4);
    // Links that can be cut per instance: A cannot reach nodes 3-4 for a while, B nodes 1-2.
    const cut = { a: false, b: false };
    const linked = (who: 'a' | 'b', far: number[]) =>
      nodes.map(
        (node, i) =>
          new Proxy(node, {
            get(target, property, receiver) {
              const value: unknown = Reflect.get(target, property, receiver);
              if (property !== 'acquire' || !far.includes(i)) return value;
              return (...args: unknown[]) =>
                cut[who]
                  ? Promise.reject(new Error('cut'))
                  : (value as (...x: unknown[]) => unknown).apply(target, args);
            },
          }),
      );
    const holder = new Redlock(nodes, { logger: false });
    // Nodes 3 and 4 step their clocks below; the step check would refuse them for a while, which is not the point.
    const options = { logger: false, fair: true, maxRetryDelay: 100, detectClockSteps: false } as const;
    const a = new Redlock(linked('a', [2, 3]), options);
    const b = new Redlock(linked('b', [0, 1]), options);
    instances.push(holder, a, b);
    const held = await holder.acquire('split', { ttl: 10_000 });
    const grantedAt: number[] = [];
    const take = (redlock: Redlock) =>
      redlock.acquire('split', { wait: 60_000 }).then(async (lock: Lock) => {
        grantedAt.push(Date.now());
        await lock.release();
      });
    // A's ticket reaches nodes 1-2 first, B's nodes 3-4. Then the clocks of 3-4 step forward, so A's arrival
    // there, counted on their clocks when it joins, comes after B's: nodes 1-2 put A first, 3-4 put B first.
    cut.a = cut.b = true;
    const first = take(a);
    await jest.advanceTimersByTimeAsync(1);
    const second = take(b);
    await jest.advanceTimersByTimeAsync(1);
    nodes[2].stepClock(200);
    nodes[3].stepClock(200);
    cut.a = cut.b = false;
    await jest.advanceTimersByTimeAsync(300);
    const heads = (await holder.inspect('split')).nodes.map((node) => node.waiters?.[0]?.id);
    // The scenario happened: the two pairs disagree (a quorum of 4 needs 3).
    expect(heads[0]).toBeDefined();
    expect(heads[0]).toBe(heads[1]);
    expect(heads[2]).toBe(heads[3]);
    expect(heads[0]).not.toBe(heads[2]);
    const releasedAt = Date.now();
    await held.release();
    await jest.advanceTimersByTimeAsync(3_000);
    await Promise.all([first, second]);
    // A turn lasts until the head's ticket would expire unless renewed (the intent's ttl, 400 ms here); after
    // the turns that cannot agree, anyone goes: the first grant comes within two of them.
    expect(grantedAt).toHaveLength(2);
    expect(grantedAt[0] - releasedAt).toBeLessThanOrEqual(2 * 400 + 100);
  });
});
