import { InvalidArgumentError, type Lock, LockBusyError, PermitCountMismatchError, Redlock } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';
import { NodeCalls } from './node-calls';

/**
 * For tests that count on which permit is taken: connected first, and a node timeout a loaded host cannot
 * reach. A permit whose attempt failed (a node still connecting, or slower than the default 50 ms) is
 * passed over for the next one, which such a test would read as the wrong permit (seen once in CI).
 */
const ORDERED = { logger: false, restartGuard: false, nodeTimeout: 1_000 } as const;

describe('counting semaphores: { permits: n } over the quorum (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeAll });
  /** An instance whose first guess is permit 0 (random 0), for tests that count on which permit is taken. */
  const orderedInstance = async () => {
    const redlock = new Redlock(redisNodes.urls, ORDERED, { random: () => 0 });
    await redlock.connect();
    return redlock;
  };

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
    // Nothing was taken by the refused call, though its first attempt went out with the read (and won, when
    // it tried a permit `a` does not hold): every permit's keys belong to `a` or are free.
    for (let slot = 0; slot < 5; slot++) {
      const values = await valuesOnNodes(redisNodes, `redlock:{sem:n}#${slot}`);
      expect(values).toEqual(Array(3).fill(slot === lock.permit ? lock.value : null));
    }
    await lock.release();
  });

  it('refused for another number of permits after its first attempt won: that permit is released first', async () => {
    const a = await redlockOn(redisNodes);
    // b tries permit 4 with its read (random 0.9 of 5), which a, holding one of 2, never touches.
    const b = new Redlock(redisNodes.urls, { logger: false, restartGuard: false }, { random: () => 0.9 });
    try {
      await b.connect();
      const lock = await a.acquire('sem:won', { permits: 2 });
      const calls = new NodeCalls(b.nodes);
      const granted: boolean[] = [];
      for (const node of b.nodes) {
        const acquire = node.acquire.bind(node);
        node.acquire = (request) => {
          return acquire(request).then((reply) => (granted.push(reply.outcome === 'acquired'), reply));
        };
      }
      await expect(b.acquire('sem:won', { permits: 5 })).rejects.toBeInstanceOf(PermitCountMismatchError);
      // The scenario happened: permit 4 was granted on every node before the read refused the call.
      expect(granted).toEqual([true, true, true]);
      await calls.idle();
      expect(await valuesOnNodes(redisNodes, 'redlock:{sem:won}#4')).toEqual([null, null, null]);
      await lock.release();
    } finally {
      await b.quit();
    }
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

  /** Counts the most acquire calls the instance had in flight at once, over all its nodes. */
  function countInFlight(redlock: Redlock): { most: number; sent: number } {
    const seen = { most: 0, sent: 0 };
    let inFlight = 0;
    for (const node of redlock.nodes) {
      const acquire = node.acquire.bind(node);
      node.acquire = (request) => {
        seen.sent++;
        seen.most = Math.max(seen.most, ++inFlight);
        return acquire(request).finally(() => inFlight--);
      };
    }
    return seen;
  }

  it.each(['readPermits()', 'inspect() on nodes without readPermits()'])(
    'the permit the nodes read free is the one tried next (63 of 64 held); the one won last goes with the read, read by %s',
    async (how) => {
      // random 0 for both: the holder takes permits 0–62 in order, the caller's first guess is permit 0 (held).
      const holder = await orderedInstance();
      const caller = await orderedInstance();
      if (how !== 'readPermits()') for (const node of caller.nodes) node.readPermits = undefined;
      try {
        const held: Lock[] = [];
        for (let i = 0; i < 63; i++) held.push(await holder.acquire('sem:wide', { permits: 64 }));
        const free = [...Array(64).keys()].find((slot) => !held.some((lock) => lock.permit === slot));
        expect(free).toBe(63);
        const seen = countInFlight(caller);
        const lock = await caller.acquire('sem:wide', { permits: 64 });
        expect(lock.permit).toBe(free);
        // The random permit tried with the read, then the one read free: one permit at a time, on each of the
        // 3 nodes (trying them one by one: up to 64 × 3 calls in a row).
        expect(seen).toEqual({ most: 3, sent: 6 });
        // Taken again by the same instance: the permit it won last goes out with the read, and is free.
        await lock.release();
        const again = countInFlight(caller);
        // Each acquire is sent while that node's read is still unanswered: one round trip.
        let readsOut = 0;
        const sentDuringRead: boolean[] = [];
        for (const node of caller.nodes) {
          for (const method of ['readPermits', 'inspect'] as const) {
            const original = node[method]?.bind(node) as ((...args: never[]) => Promise<unknown>) | undefined;
            if (!original) continue;
            (node as unknown as Record<string, unknown>)[method] = (...args: never[]) => {
              readsOut++;
              return original(...args).finally(() => readsOut--);
            };
          }
          const acquire = node.acquire.bind(node);
          node.acquire = (request) => {
            sentDuringRead.push(readsOut > 0);
            return acquire(request);
          };
        }
        const second = await caller.acquire('sem:wide', { permits: 64 });
        expect(second.permit).toBe(free);
        expect(again).toEqual({ most: 3, sent: 3 });
        expect(sentDuringRead).toEqual([true, true, true]);
        await Promise.all([second, ...held].map((one) => one.release()));
      } finally {
        await Promise.all([holder.quit(), caller.quit()]);
      }
    },
  );

  it('the read sent with the permit won last skips the scan while that permit is free, and reads all once it is lost', async () => {
    const caller = await orderedInstance();
    const admin = redisNodes.nodes.map((node) => node.redis());
    try {
      // Won once (permit 0 with random 0): the next call's read goes out with an attempt on it.
      await (await caller.acquire('sem:race', { permits: 8 })).release();
      const reads: (number | undefined)[][] = caller.nodes.map(() => []);
      const scans = caller.nodes.map(() => 0);
      // A read ends once a quorum answered: the last node's answer is awaited here before counting.
      const answered: Promise<unknown>[] = [];
      const lastRead: Promise<unknown>[] = [];
      caller.nodes.forEach((node, i) => {
        const readPermits = node.readPermits!.bind(node);
        node.readPermits = (key, permitKeys, permits, ttl, next) => {
          reads[i].push(next);
          const reading = readPermits(key, permitKeys, permits, ttl, next).then((one) => {
            if (one.free) scans[i]++;
            return one;
          });
          answered.push(reading);
          lastRead[i] = reading;
          return reading;
        };
      });
      // Free on every node: each read answers the limit alone, and the attempt wins.
      const first = await caller.acquire('sem:race', { permits: 8 });
      expect(first.permit).toBe(0);
      await Promise.allSettled(answered);
      expect(reads).toEqual([[0], [0], [0]]);
      expect(scans).toEqual([0, 0, 0]);
      await first.release();
      // Taken by someone else between each node's read and the attempt behind it (held back until that node's
      // read answered): the read skipped the scan, so every permit is read again before the next is tried —
      // one at a time, not all seven at once.
      const tried: string[] = [];
      caller.nodes.forEach((node, i) => {
        const acquire = node.acquire.bind(node);
        node.acquire = async (request) => {
          tried.push(request.keys[0].replace('redlock:{sem:race}', ''));
          if (request.keys[0] === 'redlock:{sem:race}#0') {
            await lastRead[i];
            await admin[i].set('redlock:{sem:race}#0', 'someone', 'PX', 30_000);
          }
          return acquire(request);
        };
      });
      reads.forEach((list) => (list.length = 0));
      const second = await caller.acquire('sem:race', { permits: 8 });
      expect(second.permit).toBe(1);
      await Promise.allSettled(answered);
      expect(reads).toEqual([
        [0, undefined],
        [0, undefined],
        [0, undefined],
      ]);
      expect(scans).toEqual([1, 1, 1]);
      expect(tried.sort()).toEqual(['#0', '#0', '#0', '#1', '#1', '#1']);
      await second.release();
    } finally {
      admin.forEach((one) => one.disconnect());
      await caller.quit();
    }
  });

  it('one round without reading the nodes: the random permit busy, every other is tried at once; extras won are released', async () => {
    // Slot 0 first for both (random 0): the holder takes it, the caller finds it busy.
    const holder = await orderedInstance();
    const caller = await orderedInstance();
    try {
      const held = await holder.acquire('sem:round', { permits: 8 });
      expect(held.permit).toBe(0);
      // Nodes that cannot be read (a custom LockNode without readPermits() or inspect()): no hint which
      // permits are free.
      for (const node of caller.nodes) {
        node.readPermits = undefined;
        node.inspect = undefined;
      }
      const calls = new NodeCalls(caller.nodes);
      const seen = countInFlight(caller);
      const lock = await caller.acquire('sem:round', { permits: 8 });
      // Slots 1–7 were asked together (7 slots × 3 nodes in flight at once), not one after another.
      expect(seen.most).toBe(7 * 3);
      expect(lock.permit).toBe(1);
      // Slots 2–7, won too, are released: only slot 1 stays the caller's, slot 0 the holder's.
      await calls.idle();
      for (const slot of [2, 3, 4, 5, 6, 7])
        expect(await valuesOnNodes(redisNodes, `redlock:{sem:round}#${slot}`)).toEqual([null, null, null]);
      expect(await valuesOnNodes(redisNodes, `redlock:{sem:round}#1`)).toEqual(Array(3).fill(lock.value));
      await lock.release();
      await held.release();
    } finally {
      await Promise.all([holder.quit(), caller.quit()]);
    }
  });

  it("a semaphore's read and the attempt sent with it go to each node in one write", async () => {
    // Socket writes by this process, counted while `fn` runs (every connection: only the caller's are busy).
    const net = require('node:net') as typeof import('node:net');
    const proto = net.Socket.prototype as unknown as {
      _writeGeneric(writev: boolean, ...rest: unknown[]): unknown;
    };
    const writesDuring = async (fn: () => Promise<unknown>) => {
      const original = proto._writeGeneric;
      const writes: boolean[] = [];
      proto._writeGeneric = function (this: unknown, writev: boolean, ...rest: unknown[]) {
        writes.push(writev);
        return original.call(this, writev, ...rest);
      };
      try {
        await fn();
      } finally {
        proto._writeGeneric = original;
      }
      return writes;
    };
    const caller = await redlockOn(redisNodes);
    // Taken once: the next call's first round sends its read with an attempt on that permit, which is free.
    await (await caller.acquire('sem:one-write', { permits: 8 })).release();
    let lock!: Lock;
    const together = await writesDuring(
      async () => (lock = await caller.acquire('sem:one-write', { permits: 8 })),
    );
    expect(together).toEqual([true, true, true]);
    await lock.release();
    // Negative control: the same two calls to each node in two turns are two writes each.
    const [key, permitKeys] = [
      'redlock:{sem:one-write}#permits',
      [...Array(8).keys()].map((i) => `redlock:{sem:one-write}#${i}`),
    ];
    const apart = await writesDuring(async () => {
      await Promise.all(caller.nodes.map((node) => node.readPermits!(key, permitKeys, 8, 1_000)));
      await new Promise((resolve) => setImmediate(resolve));
      await Promise.all(caller.nodes.map((node) => node.release([permitKeys[0]], 'nobody')));
    });
    expect(apart).toEqual([false, false, false, false, false, false]);
  });

  it('refuses permits over several resources', async () => {
    const redlock = await redlockOn(redisNodes);
    await expect(redlock.acquire(['a', 'b'], { permits: 2 })).rejects.toThrow(
      /permits: 2 takes one resource, got \["a","b"\]/,
    );
  });
});
