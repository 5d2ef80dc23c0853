import { createSentinel as createSentinel5 } from 'redis';
import { createSentinel as createSentinel6 } from 'redis6';
import { Redlock } from '../../lib';
import { NodeCommands, RedisNodes, startRedisNodes, subscribeTo } from '../support';
import { SentinelSet, startSentinelSet } from '../support/sentinel';

/** A node-redis 5 or 6 sentinel: `createSentinel({ name, sentinelRootNodes })`. */
type Sentinel = ReturnType<typeof createSentinel5> | ReturnType<typeof createSentinel6>;

const VERSIONS = [
  ['node-redis 5', 5],
  ['node-redis 6', 6],
] as const;

/**
 * node-redis' `createSentinel()` passed as a node (next to two plain nodes): its `sendCommand` takes an
 * `isReadonly` flag first, so it is driven as a sentinel, not as a client — every command on the current
 * primary, its subscriber a `duplicate()` sentinel — against a real redis-sentinel, across a failover.
 */
describe('node-redis createSentinel() as a node (primary + replica behind a sentinel, 2 plain nodes)', () => {
  let set: SentinelSet;
  let plain: RedisNodes;
  const opened: Sentinel[] = [];
  jest.setTimeout(60_000);

  beforeAll(async () => {
    set = await startSentinelSet('nrprimary');
    plain = await startRedisNodes(2);
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((sentinel) => sentinel.destroy().catch(() => undefined)));
  });
  afterAll(async () => {
    await plain?.stop();
    await set?.stop();
  });

  const sentinelFrom = (major: 5 | 6): Sentinel => {
    const options = { name: set.name, sentinelRootNodes: [{ host: '127.0.0.1', port: set.sentinelPort }] };
    const sentinel: Sentinel = major === 5 ? createSentinel5(options) : createSentinel6(options);
    sentinel.on('error', () => undefined);
    opened.push(sentinel);
    return sentinel;
  };
  const redlockOver = (sentinel: Sentinel) =>
    new Redlock([sentinel, ...plain.urls], {
      restartGuard: false,
      logger: false,
      nodeTimeout: 1_000,
    });

  it.each(VERSIONS)(
    '%s: connected by redlock.connect(); fencing on the primary, inspect, holders, a waiter subscribed there',
    async (_, major) => {
      await set.primary.flushAll();
      const sentinel = sentinelFrom(major);
      expect(sentinel.isOpen).toBe(false);
      const redlock = redlockOver(sentinel);
      try {
        expect((await redlock.connect(10_000)).map((state) => state.ready)).toEqual([true, true, true]);
        expect(redlock.nodes[0].name).toBe('node-redis sentinel');

        const lock = await redlock.acquire('nrs:1', { fencing: true, ttl: 10_000 });
        expect(lock.fencingToken).toBeGreaterThan(0);
        // The key is on the primary the sentinel reports.
        const primary = set.primary.nodes[0].redis();
        try {
          expect(await primary.get('redlock:{nrs:1}')).toBe(lock.value);
        } finally {
          primary.disconnect();
        }
        const inspected = await redlock.inspect('nrs:1');
        expect(inspected.state).toBe('held');
        expect(inspected.nodes[0]).toMatchObject({ node: redlock.nodes[0].name });
        expect((await redlock.holders({ prefix: 'nrs:' })).map((held) => held.resource)).toEqual(['nrs:1']);

        // A waiter listens on the primary for the release announcement (node-redis 6: a duplicate() sentinel;
        // 5: the sentinel's own pub/sub connection). The release is decided at quorum: its settled count says
        // the sentinel's primary released it too.
        // The primary's MONITOR shows the waiter's SUBSCRIBE once it ran: the channel is listed from then on.
        const commands = await NodeCommands.open(set.primary.nodes);
        const waiter = redlock.acquire('nrs:1', { wait: 20_000 });
        const admin = set.primary.nodes[0].redis();
        try {
          await commands.ran(subscribeTo('redlock:{nrs:1}:released'));
          expect(await admin.pubsub('CHANNELS', '*')).toContain('redlock:{nrs:1}:released');
        } finally {
          commands.close();
          admin.disconnect();
        }
        expect((await (await redlock.release(lock)).settled).releasedOn).toBe(3);
        const next = await waiter;
        expect(next.value).not.toBe(lock.value);
        // The waiter may have won on the plain nodes before the primary's release landed: a quorum at least.
        expect((await (await redlock.release(next)).settled).releasedOn).toBeGreaterThanOrEqual(2);
      } finally {
        await redlock.quit();
      }
      // The sentinel stays the application's: open after quit().
      expect(sentinel.isOpen).toBe(true);
    },
  );

  it.each(VERSIONS)('%s: locks land on the new primary after a failover', async (_, major) => {
    const sentinel = sentinelFrom(major);
    const masters = masterChanges(sentinel);
    await sentinel.connect();
    const redlock = redlockOver(sentinel);
    try {
      await redlock.connect(10_000);
      await (await redlock.acquire('nrs:before')).release();
      const before = await set.primaryAddress();
      const after = await set.failover();
      expect(after).not.toBe(before);
      // The sentinel follows: it announces the new primary (told by the sentinel's +switch-master), and a
      // command through it (run once its reconfiguration is done) lands there.
      await masters.reached(after);
      await sentinel.ping();
      // A lock's key is then written on the new primary and released from all 3 nodes.
      const [host, port] = after.split(':');
      const lock = await redlock.tryAcquire('nrs:after', { ttl: 5_000 });
      expect(lock).not.toBeNull();
      expect(await newPrimaryValue(host, Number(port), 'redlock:{nrs:after}')).toBe(lock!.value);
      expect((await (await redlock.release(lock!)).settled).releasedOn).toBe(3);
    } finally {
      await redlock.quit();
    }
  });
});

/**
 * The primaries a node-redis sentinel switches to (its `topology-change` events of type MASTER_CHANGE, as
 * host:port), from now on: `reached(address)` resolves once it switched to that one.
 */
function masterChanges(sentinel: Sentinel): { reached(address: string): Promise<void> } {
  const seen: string[] = [];
  const waiters = new Set<() => void>();
  (sentinel as unknown as NodeJS.EventEmitter).on(
    'topology-change',
    (event: { type: string; node?: { host: string; port: number } }) => {
      if (event.type !== 'MASTER_CHANGE' || !event.node) return;
      seen.push(`${event.node.host}:${event.node.port}`);
      for (const waiter of [...waiters]) waiter();
    },
  );
  return {
    reached: (address) =>
      new Promise((resolve) => {
        const check = () => {
          if (!seen.includes(address)) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
  };
}

/** The value of `key` on the server at host:port, read with a fresh client. */
async function newPrimaryValue(host: string, port: number, key: string): Promise<string | null> {
  const { default: Redis } = await import('ioredis');
  const client = new Redis({ host, port, maxRetriesPerRequest: 1 });
  try {
    return await client.get(key);
  } finally {
    client.disconnect();
  }
}
