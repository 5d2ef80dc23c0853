import { Redis } from 'ioredis';
import { Lock, LockLostError, LockNode, Redlock } from '../../lib';
import { IoredisLockNode } from '../../lib/redis';
import { useRedisNodes } from '../support';
import { closeAll, delay, redlockOn } from './helpers';

/** EVALSHA and EVAL calls a node has run so far (INFO commandstats). */
async function scriptCalls(redis: Redis): Promise<number> {
  const stats = await redis.info('commandstats');
  let calls = 0;
  for (const match of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
  return calls;
}

/** Node `index`'s LockNode without `extendMany`: the core must renew each lock on its own there. */
function withoutBatch(node: IoredisLockNode): LockNode {
  return {
    name: node.name,
    acquire: (request) => node.acquire(request),
    fence: (...args) => node.fence(...args),
    extend: (...args) => node.extend(...args),
    release: (...args) => node.release(...args),
    connect: (timeout) => node.connect(timeout),
    close: (timeout) => node.close(timeout),
  };
}

describe('batched renewal (3 real nodes): one script call per node for many locks, each decided on its own', () => {
  const nodes = useRedisNodes(3, {
    afterEach: async () => {
      for (const node of nodes.nodes) {
        if (node.paused) await node.resume();
        if (!node.running) await node.start();
      }
      await nodes.flushAll();
    },
    afterAll: closeAll,
  });
  const admins: Redis[] = [];
  afterAll(() => admins.forEach((admin) => admin.disconnect()));
  const admin = (i: number): Redis => (admins[i] ??= nodes.nodes[i].redis());

  /** `count` locks (a quarter of them read locks, one of two resources), each kept alive. */
  async function holdMany(redlock: Redlock, count: number, ttl: number, tag: string) {
    const locks: Lock[] = [];
    const aborted: unknown[] = [];
    /** Validity left when each lock's signal aborted: > 0 when a renewal's answers showed the loss. */
    const leftAtAbort: number[] = [];
    for (let i = 0; i < count; i++) {
      const read = i % 4 === 0;
      const lock = await redlock.acquire(read ? `${tag}:r${i}` : [`${tag}:w${i}`, `${tag}:x${i}`], {
        ttl,
        ...(read ? { mode: 'read' as const } : {}),
      });
      lock.signal.addEventListener('abort', () => {
        aborted.push(lock.signal.reason);
        leftAtAbort.push(lock.validUntil - performance.now());
      });
      locks.push(lock);
    }
    const stops = locks.map((lock) => redlock.keepAlive(lock));
    const stop = async () => {
      for (const stopOne of stops) stopOne();
      await Promise.all(locks.map((lock) => redlock.release(lock)));
    };
    return { locks, aborted, leftAtAbort, stop };
  }

  it('hundreds of locks are renewed several times with fewer script calls than locks, none lost', async () => {
    const redlock = await redlockOn(nodes);
    let renewed = 0;
    redlock.on('extended', () => renewed++);
    const held = await holdMany(redlock, 400, 900, 'many');
    const before = await Promise.all([0, 1, 2].map((i) => scriptCalls(admin(i))));
    await delay(2_000);
    const after = await Promise.all([0, 1, 2].map((i) => scriptCalls(admin(i))));
    const pttls = await Promise.all(held.locks.map((lock) => admin(0).pttl(lock.keys[0])));
    await held.stop();
    // Each lock is due every ~300 ms: more than 4 rounds, i.e. well over 1,600 renewals in 2 s.
    expect(renewed).toBeGreaterThan(400 * 4);
    // One script call per lock and node would be over 1,600 calls on each node; batched, a few per round.
    for (let i = 0; i < 3; i++) expect(after[i] - before[i]).toBeLessThan(400);
    expect(held.aborted).toEqual([]);
    expect(redlock.stats.locksLost).toBe(0);
    // Read locks live in their readers sets (pttl of the lock key is -2 there); every write lock key is live.
    const writeTtls = pttls.filter((_, i) => i % 4 !== 0);
    expect(Math.min(...writeTtls)).toBeGreaterThan(0);
  });

  it('a node paused mid-batch delays no other node: renewals go on on the quorum, none lost', async () => {
    const redlock = await redlockOn(nodes);
    let renewed = 0;
    redlock.on('extended', () => renewed++);
    const held = await holdMany(redlock, 200, 600, 'paused');
    await delay(250);
    await nodes.nodes[0].pause();
    const atPause = renewed;
    await delay(1_500);
    const duringPause = renewed - atPause;
    await nodes.nodes[0].resume();
    await held.stop();
    // At least two rounds (every 200 ms) while one node answered nothing.
    expect(duringPause).toBeGreaterThan(200 * 2);
    expect(held.aborted).toEqual([]);
    expect(redlock.stats.locksLost).toBe(0);
  });

  it('a node restarted empty is outvoted; when a second loses the keys too, every lock is lost at its next renewal', async () => {
    const redlock = await redlockOn(nodes);
    const held = await holdMany(redlock, 100, 1_500, 'restart');
    await nodes.nodes[1].restartEmpty();
    await delay(1_200); // more than two renewal rounds with one node answering "not the owner"
    expect(held.aborted).toEqual([]);
    await admin(2).flushall();
    await delay(800); // the next round finds a majority saying "not the owner"
    await held.stop();
    expect(held.aborted).toHaveLength(100);
    for (const reason of held.aborted) {
      expect(reason).toBeInstanceOf(LockLostError);
      expect(String((reason as Error).message)).toMatch(/too few nodes still hold it/);
    }
    expect(redlock.stats.locksLost).toBe(100);
    // Lost by the renewal's answers, not by a deadline: each still had validity left when its signal aborted.
    expect(Math.min(...held.leftAtAbort)).toBeGreaterThan(0);
  });

  it('when no quorum answers, each lock is lost at its own deadline (the order of their deadlines), never before', async () => {
    const redlock = await redlockOn(nodes);
    const locks: Lock[] = [];
    const abortedAt = new Map<Lock, number>();
    for (const ttl of [700, 500, 900, 600]) {
      const lock = await redlock.acquire(`deadline:${ttl}`, { ttl });
      lock.signal.addEventListener('abort', () => abortedAt.set(lock, performance.now()));
      redlock.keepAlive(lock);
      locks.push(lock);
    }
    await nodes.nodes[0].kill();
    await nodes.nodes[1].pause();
    const deadlines = new Map(locks.map((lock) => [lock, lock.validUntil]));
    await delay(1_300);
    await nodes.nodes[1].resume();
    expect(abortedAt.size).toBe(4);
    const byDeadline = [...locks].sort((a, b) => deadlines.get(a)! - deadlines.get(b)!);
    const byAbort = [...locks].sort((a, b) => abortedAt.get(a)! - abortedAt.get(b)!);
    expect(byAbort).toEqual(byDeadline);
    for (const lock of locks) {
      expect(abortedAt.get(lock)!).toBeGreaterThanOrEqual(deadlines.get(lock)! - 1);
      expect(String((lock.signal.reason as Error).message)).toMatch(/validity ran out/);
    }
    await Promise.all(locks.map((lock) => redlock.release(lock)));
  });

  it("nodes without extendMany renew each lock on its own; a node whose batch answer has the wrong shape is that node's error", async () => {
    const clients = nodes.urls.map((url) => new Redis(url, { lazyConnect: true }));
    const raw = clients.map((client, i) => new IoredisLockNode(client, `node${i}`));
    let perLock = 0;
    const plain = withoutBatch(raw[0]);
    const counted: LockNode = { ...plain, extend: (...args) => (perLock++, plain.extend(...args)) };
    const hostile: LockNode = { ...withoutBatch(raw[1]), extendMany: async () => [true] };
    const redlock = new Redlock([counted, hostile, raw[2]], { logger: false, restartGuard: false });
    const nodeErrors: string[] = [];
    redlock.on('node-error', ({ error }) => nodeErrors.push(error.message));
    try {
      await Promise.all(clients.map((client) => client.connect()));
      await redlock.connect(2_000);
      const held = await holdMany(redlock, 20, 600, 'mixed');
      await delay(900);
      await held.stop();
      expect(held.aborted).toEqual([]);
      expect(perLock).toBeGreaterThanOrEqual(20 * 2);
      expect(
        nodeErrors.some((message) =>
          /extendMany\(\) resolved an array of 1 instead of \d+ booleans/.test(message),
        ),
      ).toBe(true);
    } finally {
      await redlock.quit();
      await Promise.all(clients.map((client) => client.quit().catch(() => undefined)));
    }
  });

  describe('review findings: hostile batches, late batches, releases and shorter extends', () => {
    /** Node `i` as a LockNode whose extendMany waits `delayMs` before it asks the server (a batch in flight). */
    function delayedBatches(node: IoredisLockNode, delayMs: number, calls: { count: number }): LockNode {
      return {
        ...withoutBatch(node),
        extendMany: async (items) => {
          calls.count++;
          await delay(delayMs);
          return node.extendMany(items);
        },
      };
    }

    async function redlockOver(make: (node: IoredisLockNode, i: number) => LockNode) {
      const clients = nodes.urls.map((url) => new Redis(url, { lazyConnect: true }));
      const raw = clients.map((client, i) => new IoredisLockNode(client, `node${i}`));
      const redlock = new Redlock(raw.map(make), { logger: false, restartGuard: false });
      await Promise.all(clients.map((client) => client.connect()));
      await redlock.connect(2_000);
      const close = async () => {
        await redlock.quit();
        await Promise.all(clients.map((client) => client.quit().catch(() => undefined)));
      };
      return { redlock, close };
    }

    it("a node whose extendMany returns a thenable that throws is that node's error: no unhandled rejection, renewals go on", async () => {
      const hostile = {
        get then(): never {
          throw new Error('hostile then');
        },
      };
      const { redlock, close } = await redlockOver((node, i) =>
        i === 0 ? { ...withoutBatch(node), extendMany: () => hostile as never } : node,
      );
      try {
        const held = await holdMany(redlock, 10, 300, 'thenable');
        await delay(700);
        await held.stop();
        expect(held.aborted).toEqual([]);
      } finally {
        await close();
      }
    });

    it('a batch sent before a shorter extend by hand, and answered after it, does not lengthen the lock', async () => {
      const calls = { count: 0 };
      const { redlock, close } = await redlockOver((node) => delayedBatches(node, 150, calls));
      try {
        const lock = await redlock.acquire('shorter', { ttl: 600 });
        const stop = redlock.keepAlive(lock);
        while (calls.count === 0) await delay(5); // the renewal batch is in flight (answers in 150 ms)
        await redlock.extend(lock, 200); // sent after it, answered before it
        stop();
        await delay(250); // the batch has answered (success, ttl 600)
        expect(lock.remainingTime).toBeLessThanOrEqual(200 - 250 + 60);
        await redlock.release(lock);
      } finally {
        await close();
      }
    });

    it('a lock released while its renewal is in flight is neither lengthened nor reported extended', async () => {
      const calls = { count: 0 };
      const { redlock, close } = await redlockOver((node) => delayedBatches(node, 150, calls));
      const events: string[] = [];
      redlock.on('extended', () => events.push('extended'));
      redlock.on('released', () => events.push('released'));
      try {
        const lock = await redlock.acquire('released-in-flight', { ttl: 600 });
        redlock.keepAlive(lock);
        while (calls.count === 0) await delay(5);
        await redlock.release(lock);
        const after = lock.remainingTime;
        await delay(250);
        expect(events).toEqual(['released']);
        expect(lock.remainingTime).toBeLessThanOrEqual(after);
      } finally {
        await close();
      }
    });

    it('keepAlive twice on one lock, one stopped: it is still renewed, and a shorter extend still moves its deadline timer', async () => {
      const redlock = await redlockOn(nodes);
      const lock = await redlock.acquire('kept-twice', { ttl: 600 });
      let abortedAfter = NaN;
      const stopA = redlock.keepAlive(lock);
      const stopB = redlock.keepAlive(lock);
      stopB();
      stopB(); // idempotent: A still keeps it
      await delay(900); // past the first ttl: renewed by A
      expect(lock.signal.aborted).toBe(false);
      await redlock.extend(lock, 300);
      const from = performance.now();
      lock.signal.addEventListener('abort', () => (abortedAfter = performance.now() - from));
      await nodes.nodes[0].kill();
      await nodes.nodes[1].pause();
      await delay(1_200);
      await nodes.nodes[1].resume();
      stopA();
      expect(abortedAfter).toBeLessThan(1_000); // by the 300 ms deadline, not a later one
    });

    it('a logger that throws on a loss does not stop the watchdog: a later lock is still lost at its deadline', async () => {
      const redlock = await redlockOn(nodes, {
        logger: {
          warn: () => {
            throw new Error('logger down');
          },
        },
      });
      const first = await redlock.acquire('throwing-logger:1', { ttl: 300 });
      const second = await redlock.acquire('throwing-logger:2', { ttl: 900 });
      redlock.keepAlive(first);
      redlock.keepAlive(second);
      await nodes.nodes[0].kill();
      await nodes.nodes[1].pause();
      await delay(1_500);
      await nodes.nodes[1].resume();
      expect(first.signal.aborted).toBe(true);
      expect(second.signal.aborted).toBe(true);
    });

    it('a shorter extend by hand moves the deadline timer: the signal aborts at the new deadline', async () => {
      const redlock = await redlockOn(nodes);
      const lock = await redlock.acquire('moved-deadline', { ttl: 5_000 });
      let abortedAfter = NaN;
      const stop = redlock.keepAlive(lock);
      await redlock.extend(lock, 300);
      const from = performance.now();
      lock.signal.addEventListener('abort', () => (abortedAfter = performance.now() - from));
      await nodes.nodes[0].kill();
      await nodes.nodes[1].pause(); // no renewal can succeed any more
      await delay(1_500);
      await nodes.nodes[1].resume();
      stop();
      // Aborted by the 300 ms deadline, not the 5 s one it had when it was kept alive.
      expect(abortedAfter).toBeLessThan(1_500);
      expect(String((lock.signal.reason as Error).message)).toMatch(/validity ran out/);
    });
  });
});
