import { AcquireAbortedError } from '../../lib';
import { RedisNodes, useRedisNodes } from '../support';
import { closeAll, delay, redlockOn } from './helpers';

/** Lock scripts (EVALSHA and EVAL) run on one node so far, from INFO commandstats. */
async function scriptCalls(nodes: RedisNodes, index = 0): Promise<number> {
  const admin = nodes.nodes[index].redis();
  try {
    const stats = await admin.info('commandstats');
    let calls = 0;
    for (const match of stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
    return calls;
  } finally {
    admin.disconnect();
  }
}

describe('timers above 2^31 − 1 ms (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll, flushAfterEach: false });

  it('a waiter (wait: Infinity) behind a key whose ttl exceeds the timer limit sleeps instead of spinning (1,403 script calls in 1 s before the fix)', async () => {
    // A holder whose key outlives what a Node timer can wait (another client, or an older version without
    // the limit): unclamped, the waiter's sleep until that ttl would fire after 1 ms, again and again.
    const admin = nodes.nodes.map((node) => node.redis());
    await Promise.all(admin.map((client) => client.set('redlock:{long}', 'someone-else', 'PX', 2 ** 32)));
    const waiter = await redlockOn(nodes);
    const abort = new AbortController();
    const before = await scriptCalls(nodes);
    const pending = waiter.acquire('long', { wait: Infinity, signal: abort.signal }).catch((e: unknown) => e);
    await delay(1_000);
    const during = (await scriptCalls(nodes)) - before;
    abort.abort();
    expect(await pending).toBeInstanceOf(AcquireAbortedError);
    // Two attempts (the first, and one right after subscribing), each with its release, then one sleep.
    expect(during).toBeGreaterThanOrEqual(2);
    expect(during).toBeLessThan(20);
    await Promise.all(admin.map((client) => client.del('redlock:{long}').finally(() => client.disconnect())));
  });

  it("node-redlock's idiom, a ttl of Number.MAX_SAFE_INTEGER / 10 ms: locked, fenced, extended, renewed never, released", async () => {
    const ttl = Math.floor(Number.MAX_SAFE_INTEGER / 10); // ≈ 2.8 × 10⁵ years
    const redlock = await redlockOn(nodes, { ttl, fencing: true, restartGuard: false });
    const lock = await redlock.acquire('forever');
    expect(lock.remainingTime).toBeGreaterThan(ttl * 0.98);
    expect(lock.fencingToken).toBeGreaterThan(0);
    const pttls = await Promise.all(
      nodes.nodes.map(async (node) => {
        const admin = node.redis();
        try {
          return await admin.pttl('redlock:{forever}');
        } finally {
          admin.disconnect();
        }
      }),
    );
    for (const pttl of pttls) expect(pttl).toBeGreaterThan(ttl - 60_000);
    await redlock.extend(lock);
    // Work under it with auto-extension: its first renewal is years away, the work just runs.
    const before = await scriptCalls(nodes);
    expect(await redlock.using('forever:work', async () => 'done')).toBe('done');
    expect((await scriptCalls(nodes)) - before).toBeLessThanOrEqual(3); // acquire, fence, release: no renewal
    await lock.release();
    expect(await redlock.tryAcquire('forever', { ttl: 1_000 })).not.toBeNull();
  });
});
