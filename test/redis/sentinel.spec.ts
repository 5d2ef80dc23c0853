import Redis from 'ioredis';
import { Redlock } from '../../lib';
import { RedisNodes, startRedisNodes } from '../support';
import { SentinelSet, startSentinelSet } from '../support/sentinel';
import { activeHandles, closeAdmin, handlesLeft } from '../core/leftovers';

/**
 * A Redlock node behind a real redis-sentinel (a primary and a replica), next to two plain nodes: locks work,
 * and keep working after the sentinel fails the primary over to the replica.
 */
describe('Sentinel (a primary + replica behind redis-sentinel, plus 2 plain nodes)', () => {
  let sentinel: SentinelSet;
  let plain: RedisNodes;
  jest.setTimeout(60_000);

  beforeAll(async () => {
    sentinel = await startSentinelSet();
    plain = await startRedisNodes(2);
  });
  afterAll(async () => {
    await plain?.stop();
    await sentinel?.stop();
  });

  it('locks through the sentinel-managed node, before and after a failover', async () => {
    const before = activeHandles();
    const redlock = new Redlock(
      [
        {
          sentinels: [{ host: '127.0.0.1', port: sentinel.sentinelPort }],
          name: sentinel.name,
          failoverDetector: true,
        },
        ...plain.urls,
      ],
      { restartGuard: false, logger: false, nodeTimeout: 500 },
    );
    try {
      expect((await redlock.connect(5_000)).every((state) => state.ready)).toBe(true);
      // Every node took part (the one behind the sentinel included): its key was there to release. A decision
      // at quorum may not wait for it, so a few rounds are allowed.
      let first = 0;
      for (let round = 0; round < 20 && first !== 3; round++) {
        first = (await (await redlock.release(await redlock.acquire('sentinel:1'))).settled).releasedOn;
      }
      expect(first).toBe(3);

      const before = await sentinel.primaryAddress();
      const after = await sentinel.failover();
      expect(after).not.toBe(before);

      // Followed the failover: the sentinel-managed node's client reconnects to the new primary (its 'ready'
      // events, until it is connected there), then that node votes yes again, on the new primary.
      const [host, port] = after.split(':');
      const managed = (redlock.nodes[0] as unknown as { client: Redis }).client;
      while (!(managed.status === 'ready' && managed.stream?.remotePort === Number(port)))
        await new Promise((resolve) => managed.once('ready', resolve));
      const newPrimary = new Redis({ host, port: Number(port), maxRetriesPerRequest: 1 });
      let onNewPrimary: string | null = null;
      let releasedOn = 0;
      try {
        // As above, a decision at quorum may not wait for it: a few rounds are allowed.
        for (let round = 0; round < 20; round++) {
          const again = await redlock.acquire('sentinel:2', { wait: 1_000 });
          onNewPrimary = await newPrimary.get('redlock:{sentinel:2}');
          releasedOn = (await (await redlock.release(again)).settled).releasedOn;
          if (releasedOn === 3 && onNewPrimary === again.value) break;
        }
      } finally {
        await closeAdmin(newPrimary);
      }
      expect(onNewPrimary).not.toBeNull();
      expect(releasedOn).toBe(3);
      expect(redlock.nodes[0].name).toBe(`sentinel ${sentinel.name}@127.0.0.1:${sentinel.sentinelPort}`);
    } finally {
      await redlock.quit();
    }
    // No socket outlives quit(): the failover detector's connections to the sentinels included. (ioredis arms a
    // 2 s timer per detector connection it closes at a failover, which ends by itself: timers are not counted.)
    expect((await handlesLeft(before)).filter((kind) => !kind.includes('× Timeout'))).toEqual([]);
  });
});
