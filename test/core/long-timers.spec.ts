import { AcquireAbortedError } from '../../lib';
import { RedlockCore } from '../../lib/core';
import { RedisNodes, useRedisNodes } from '../support';
import { AnnouncingNode } from './announcing-node';
import { NodeCalls } from './node-calls';
import { VirtualClock } from './virtual-clock';
import { closeAll, redlockOn } from './helpers';

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

  it("node-redlock's idiom, a ttl of Number.MAX_SAFE_INTEGER / 10 ms: locked, fenced, extended, renewed never, released", async () => {
    const ttl = Math.floor(Number.MAX_SAFE_INTEGER / 10); // ≈ 2.8 × 10⁵ years
    const redlock = await redlockOn(nodes, { ttl, fencing: true, restartGuard: false });
    const calls = new NodeCalls(redlock.nodes);
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
    // Every script measured below already loaded on node 0 (a first EVALSHA is answered NOSCRIPT and sent again
    // as EVAL: two calls), and every earlier answer in (calls resolve at a quorum).
    await (await redlock.acquire('forever:warm-up')).release();
    await calls.idle();
    // Work under it with auto-extension: its first renewal is years away, the work just runs.
    const before = await scriptCalls(nodes);
    expect(await redlock.using('forever:work', async () => 'done')).toBe('done');
    expect((await scriptCalls(nodes)) - before).toBeLessThanOrEqual(3); // acquire, fence, release: no renewal
    await lock.release();
    expect(await redlock.tryAcquire('forever', { ttl: 1_000 })).not.toBeNull();
  });
});

/**
 * The waiter's sleep on the system clock (Node timers), under Jest's fake timers: they turn a delay above
 * 2^31 − 1 ms into 1 ms as Node does, which is what made the waiter spin. In-memory nodes that announce
 * releases (so the waiter subscribes and sleeps until the holder's ttl); moved from the real-node test above,
 * which slept 1 s of real time.
 */
describe('timers above 2^31 − 1 ms (fake timers on the system clock, in-memory nodes)', () => {
  afterEach(() => jest.useRealTimers());

  it('a waiter (wait: Infinity) behind a key whose ttl exceeds the timer limit sleeps instead of spinning (1,403 script calls in 1 s before the fix)', async () => {
    jest.useFakeTimers();
    // A holder whose key outlives what a Node timer can wait (another client, or an older version without
    // the limit): unclamped, the waiter's sleep until that ttl would fire after 1 ms, again and again.
    const nodes = ['a', 'b', 'c'].map((name) => new AnnouncingNode(`${name}:1`, new VirtualClock()));
    for (const node of nodes) node.set('redlock:{long}', 'someone-else', 2 ** 32);
    const waiter = new RedlockCore(nodes, { logger: false, restartGuard: false }); // the system clock
    const calls = new NodeCalls(waiter.nodes);
    const abort = new AbortController();
    const pending = waiter.acquire('long', { wait: Infinity, signal: abort.signal }).catch((e: unknown) => e);
    await jest.advanceTimersByTimeAsync(1_000);
    // Node 0's acquire attempts and their releases in that second.
    const during = calls.calls.filter((call) => call.node === 0 && call.method !== 'watch').length;
    abort.abort();
    expect(await pending).toBeInstanceOf(AcquireAbortedError);
    // Two attempts (the first, and one right after subscribing), each with its release, then one sleep.
    expect(during).toBeGreaterThanOrEqual(2);
    expect(during).toBeLessThan(20);
  });
});
