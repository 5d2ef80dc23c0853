import { Redis } from 'ioredis';
import { Lock, LockLostError, LockNode, Redlock } from '../../lib';
import { IoredisLockNode } from '../../lib/redis';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

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

/**
 * Resolves once `check()` holds, checked now and after each of the instance's renewal, node-error and loss
 * events: the tests wait for the renewals they count instead of sleeping (Jest's timeout fails one that never
 * comes).
 */
function whenEvents(redlock: Redlock, check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const offs: (() => void)[] = [];
    const test = () => {
      if (!check()) return;
      offs.forEach((off) => off());
      resolve();
    };
    offs.push(redlock.on('extended', test), redlock.on('node-error', test), redlock.on('lost', test));
    test();
  });
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
    await whenEvents(redlock, () => renewed > 400 * 4);
    const after = await Promise.all([0, 1, 2].map((i) => scriptCalls(admin(i))));
    const pttls = await Promise.all(held.locks.map((lock) => admin(0).pttl(lock.keys[0])));
    await held.stop();
    // Each lock is due every ~300 ms: more than 4 rounds, over 1,600 renewals (waited for).
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
    await whenEvents(redlock, () => renewed >= 200); // a first round
    await nodes.nodes[0].pause();
    const atPause = renewed;
    await whenEvents(redlock, () => renewed - atPause > 200 * 2);
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
    let renewed = 0;
    redlock.on('extended', () => renewed++);
    await nodes.nodes[1].restartEmpty();
    // More than two renewal rounds with one node answering "not the owner".
    await whenEvents(redlock, () => renewed > 100 * 2);
    expect(held.aborted).toEqual([]);
    await admin(2).flushall();
    await whenEvents(redlock, () => held.aborted.length === 100); // a majority now says "not the owner"
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
      await whenEvents(redlock, () => perLock >= 20 * 2 && nodeErrors.length > 0);
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

  describe('review findings: hostile batches (the late batches, releases and shorter extends: renewal-deadlines.spec.ts)', () => {
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
        let renewed = 0;
        redlock.on('extended', () => renewed++);
        const held = await holdMany(redlock, 10, 300, 'thenable');
        await whenEvents(redlock, () => renewed > 10 * 2); // two rounds with node 0's batches refused
        await held.stop();
        expect(held.aborted).toEqual([]);
      } finally {
        await close();
      }
    });
  });
});
