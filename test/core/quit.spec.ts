import { Redis } from 'ioredis';
import { QuorumUnavailableError, Redlock, RedlockClosedError } from '../../lib';
import { clientCounts, useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';
import { NodeCalls } from './node-calls';

const CLOSED = /this Redlock instance was closed \(quit\(\)\)/;

describe('use after quit() (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll });
  let holder: Redlock;

  beforeAll(async () => {
    holder = await redlockOn(nodes);
  });

  async function scriptCalls(): Promise<number> {
    const admin = nodes.nodes[0].redis();
    try {
      const stats = await admin.info('commandstats');
      let calls = 0;
      for (const match of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
      return calls;
    } finally {
      admin.disconnect();
    }
  }

  it('acquire, tryAcquire, using and extend fail at once, without traffic, also over clients passed in', async () => {
    const clients = nodes.nodes.map((node) => node.redis());
    try {
      const redlock = new Redlock(clients, { logger: false, restartGuard: false });
      const sent = new NodeCalls(redlock.nodes);
      const lock = await redlock.acquire('after-quit');
      await redlock.quit();
      // acquire() resolved at a quorum: the last node's answer (node 0's, at times) may still be on its way.
      await sent.idle();
      // Clients passed in stay open: without the check the instance would go on locking through them.
      expect(clients.map((client) => client.status)).toEqual(['ready', 'ready', 'ready']);
      const before = await scriptCalls();
      const calls: [string, () => Promise<unknown>][] = [
        ['acquire', () => redlock.acquire('r')],
        ['acquire', () => redlock.tryAcquire('r')],
        ['acquire', () => redlock.using('r', async () => 1)],
        ['extend', () => redlock.extend(lock)],
        ['extend', () => lock.extend()],
      ];
      for (const [operation, call] of calls) {
        const error = await call().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RedlockClosedError);
        expect((error as Error).message).toMatch(new RegExp(`^Cannot ${operation} "(r|after-quit)": `));
        expect((error as Error).message).toMatch(CLOSED);
      }
      expect(await scriptCalls()).toBe(before);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it('an acquire waiting on a busy lock when quit() runs rejects, and leaves no subscriber connection', async () => {
    const baseline = await clientCounts(nodes);
    const held = await holder.acquire('busy-at-quit', { ttl: 20_000 });
    const waiter = new Redlock(nodes.urls, { logger: false, restartGuard: false });
    await waiter.connect(2_000);
    const calls = new NodeCalls(waiter.nodes);
    const queued = waiter.acquire('busy-at-quit', { wait: 15_000 }).catch((e: unknown) => e);
    const second = waiter.acquire('busy-at-quit', { wait: 15_000 }).catch((e: unknown) => e);
    // The first is subscribed and asleep (every node answered its second attempt, the one right after
    // subscribing), the second queued behind it in the process.
    await calls.until(() => calls.everyAnswered('acquire', 2, [0, 1, 2]), queued);
    expect((await clientCounts(nodes)).every((count, i) => count === baseline[i] + 2)).toBe(true);
    await waiter.quit();
    for (const error of [await queued, await second]) {
      expect(error).toBeInstanceOf(RedlockClosedError);
      expect((error as Error).message).toMatch(CLOSED);
    }
    // Lock client and subscriber gone on every node (quit() resolves once their sockets closed), and no new
    // one opened by the stopped waiters: read once every call they made, to the end, was answered.
    await calls.idle();
    expect((await clientCounts(nodes)).every((count, i) => count === baseline[i])).toBe(true);
    expect(await clientCounts(nodes)).toEqual(baseline);
    await held.release();
  });

  it('tryAcquire() right after new Redlock(urls), before its first connection, says to await connect()', async () => {
    const redlock = new Redlock(nodes.urls, { logger: false, restartGuard: false });
    try {
      // Sent in the same turn as the constructor: no connection can be up yet (that takes I/O).
      const outcome = await redlock.tryAcquire('fresh').catch((e: unknown) => e);
      expect(outcome).toBeInstanceOf(QuorumUnavailableError);
      const errors = (outcome as QuorumUnavailableError).votes.filter((v) => v.outcome === 'error');
      expect(errors.length).toBeGreaterThanOrEqual(2);
      for (const vote of errors) {
        expect(vote.error?.message).toMatch(
          /first connection is still being made.*await redlock\.connect\(\)/,
        );
      }
    } finally {
      await redlock.quit();
    }
  });

  it('tryAcquire() on clients not connected yet says to await connect() first', async () => {
    const lazy = nodes.nodes.map(
      (node) => new Redis({ port: node.port, host: node.host, lazyConnect: true }),
    );
    try {
      const redlock = new Redlock(lazy, { logger: false, restartGuard: false });
      const error = (await redlock.tryAcquire('lazy').catch((e: unknown) => e)) as QuorumUnavailableError;
      expect(error).toBeInstanceOf(QuorumUnavailableError);
      const errors = error.votes.filter((vote) => vote.outcome === 'error');
      expect(errors.length).toBeGreaterThanOrEqual(2); // decided once 2 of 3 failed
      for (const vote of errors) {
        expect(vote.error?.message).toMatch(/not connected yet .*await redlock\.connect\(\) before locking/);
      }
      await redlock.connect(2_000);
      const lock = await redlock.tryAcquire('lazy');
      await lock!.release();
      await redlock.quit();
    } finally {
      for (const client of lazy) client.disconnect();
    }
  });
});
