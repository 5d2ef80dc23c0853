import { performance } from 'node:perf_hooks';
import { LockBusyError, QuorumUnavailableError, Redlock, ReleaseOutcome } from '../../lib';
import { startTcpProxy, useRedisNodes } from '../support';
import { closeAll, redlockOn, valuesOnNodes } from './helpers';
import { NodeCalls } from './node-calls';

/** Each node's answer to a release, in node order. */
const outcomes = (result: ReleaseOutcome): string => result.votes.map((vote) => vote.outcome).join(' ');

describe('Redlock under node faults (5 real nodes)', () => {
  const nodes = useRedisNodes(5, {
    afterEach: async () => {
      await closeAll();
      for (const node of nodes.nodes) {
        if (node.paused) await node.resume();
        if (!node.running) await node.start();
      }
    },
    afterAll: closeAll,
  });

  it('a holder that crashes without releasing frees the lock after its ttl, not before', async () => {
    const crashed = await redlockOn(nodes);
    const survivor = await redlockOn(nodes);
    const ttl = 600;
    const lock = await crashed.acquire('job', { ttl });
    const heldAt = performance.now();
    await crashed.quit(); // the process is gone: no release, no extension
    expect(lock.isReleased).toBe(false);

    const next = await survivor.acquire('job', { ttl, wait: 5_000 });
    // The keys expire on the nodes ttl ms after they were set, which was before `heldAt`.
    expect(performance.now() - heldAt).toBeGreaterThanOrEqual(ttl - lock.ttl * 0.05 - 20);
    expect(next.remainingTime).toBeGreaterThan(0);
    await next.release();
  });

  it('locks with 2 of 5 nodes down', async () => {
    const redlock = await redlockOn(nodes);
    await nodes.nodes[0].kill();
    await nodes.nodes[3].kill();
    const lock = await redlock.acquire('two-down', { wait: 0 });
    expect(lock.remainingTime).toBeGreaterThan(0);
    const result = await redlock.release(lock);
    expect(result.releasedOn).toBe(3);
  });

  it('fails fast with 3 of 5 down, naming the nodes and their errors', async () => {
    const redlock = await redlockOn(nodes);
    for (const i of [1, 2, 4]) await nodes.nodes[i].kill();
    const error = await redlock.acquire('three-down', { wait: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    const failure = error as QuorumUnavailableError;
    for (const i of [1, 2, 4]) expect(failure.message).toContain(`127.0.0.1:${nodes.nodes[i].port}`);
    expect(failure.message).toMatch(/quorum of 3 of 5/);
    expect(failure.votes.filter((v) => v.outcome === 'error')).toHaveLength(3);
    // tryAcquire reports unavailability as an error too: null is reserved for "held by someone else".
    await expect(redlock.tryAcquire('three-down')).rejects.toBeInstanceOf(QuorumUnavailableError);
  });

  it('keeps retrying an unavailable quorum within the wait budget, then gives up', async () => {
    const redlock = await redlockOn(nodes, { retryDelay: 20 });
    for (const i of [0, 1, 2]) await nodes.nodes[i].kill();
    const error = (await redlock
      .acquire('down', { wait: 300 })
      .catch((e: unknown) => e)) as QuorumUnavailableError;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect(error.attempts).toBeGreaterThan(1);
  });

  it('removes keys won on a minority from every node after a failed attempt, also from a node that timed out', async () => {
    const redlock = await redlockOn(nodes, { nodeTimeout: 100 });
    const calls = new NodeCalls(redlock.nodes);
    const key = 'redlock:{minority}';
    // Another owner holds the resource on nodes 0-2.
    for (const i of [0, 1, 2]) {
      const admin = nodes.nodes[i].redis();
      await admin.set(key, 'someone-else', 'PX', 60_000);
      admin.disconnect();
    }
    // Node 4 is paused: our SET reaches it only after the attempt has been decided and cleaned up.
    await nodes.nodes[4].pause();
    const error = await redlock.acquire('minority', { wait: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBusyError);
    expect((error as LockBusyError).message).toContain('held by another owner');
    expect(await valuesOnNodes(nodes, key)).toEqual([
      'someone-else',
      'someone-else',
      'someone-else',
      null,
      undefined,
    ]);

    await nodes.nodes[4].resume();
    // The straggling SET lands on node 4 now; the cleanup release, queued behind it on the same connection,
    // runs right after it: read once node 4 answered both (and every other call was answered).
    await calls.until(() => calls.answered('acquire', 4) >= 1 && calls.answered('release', 4) >= 1);
    await calls.idle();
    const clean = (await valuesOnNodes(nodes, key))[4] === null;
    expect(clean).toBe(true);
  });

  it('decides without waiting for paused nodes: 2 of 5 paused still locks while they stay paused', async () => {
    const redlock = await redlockOn(nodes);
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    const lock = await redlock.acquire('paused-minority', { wait: 0 });
    expect(nodes.nodes[1].paused && nodes.nodes[2].paused).toBe(true);
    expect(lock.remainingTime).toBeGreaterThan(0);
    // The release resolves at the quorum of the 3 running nodes; the paused ones time out on `settled`.
    const released = await redlock.release(lock);
    expect(released.releasedOn).toBe(3);
    expect(released.votes.filter((v) => v.outcome === 'pending')).toHaveLength(2);
    const votes = (await released.settled).votes;
    expect(votes.filter((v) => v.outcome === 'timeout')).toHaveLength(2);
  });

  it('release resolves at quorum without the slow nodes, which release on `settled`; after quit() no node keeps the key', async () => {
    // Two of five nodes behind proxies that add 40 ms each way: their answers come ~80 ms after the others'.
    const proxies = await Promise.all([3, 4].map((i) => startTcpProxy(nodes.nodes[i].port)));
    // Direct connections to the slow nodes, open before the release: read the moment release() resolves (a
    // connection opened then takes round trips of its own, on a loaded machine longer than the 40 ms delay).
    const slowAdmins = [3, 4].map((i) => nodes.nodes[i].redis());
    let redlock: Redlock | undefined;
    try {
      await Promise.all(slowAdmins.map((admin) => admin.ping()));
      const urls = [...nodes.urls.slice(0, 3), ...proxies.map((proxy) => proxy.url)];
      redlock = new Redlock(urls, { logger: false, restartGuard: false, nodeTimeout: 500 });
      await redlock.connect(2_000);
      const lock = await redlock.acquire('slow-release', { ttl: 30_000 });
      expect(await valuesOnNodes(nodes, 'redlock:{slow-release}')).toEqual(Array(5).fill(lock.value));
      for (const proxy of proxies) proxy.setLatency(40);
      const released = await redlock.release(lock);
      const slowValues = Promise.all(slowAdmins.map((admin) => admin.get('redlock:{slow-release}')));
      expect(released.releasedOn).toBe(3);
      expect(outcomes(released)).toBe('released released released pending pending');
      // The slow nodes still held the key when release() resolved (their answers were pending).
      expect(await slowValues).toEqual([lock.value, lock.value]);
      await redlock.quit();
      expect(await valuesOnNodes(nodes, 'redlock:{slow-release}')).toEqual(Array(5).fill(null));
      const settled = await released.settled;
      expect(settled.releasedOn).toBe(5);
      expect(settled.votes.every((vote) => vote.outcome === 'released')).toBe(true);
    } finally {
      for (const admin of slowAdmins) admin.disconnect();
      await redlock?.quit();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });

  it('a release that cannot reach a quorum waits for every answer and says what each node did', async () => {
    const redlock = await redlockOn(nodes);
    const lock = await redlock.acquire('expired-mostly', { ttl: 30_000 });
    // Three nodes lose the key (as if it expired there): no quorum can delete it any more.
    await Promise.all(
      [0, 1, 2].map(async (i) => {
        const admin = nodes.nodes[i].redis();
        await admin.del('redlock:{expired-mostly}');
        admin.disconnect();
      }),
    );
    const released = await redlock.release(lock);
    expect(released.releasedOn).toBe(2);
    expect(outcomes(released)).toBe('not-owner not-owner not-owner released released');
    expect(await released.settled).toEqual({ releasedOn: released.releasedOn, votes: released.votes });
  });

  it('3 of 5 paused: fails with timeouts instead of hanging', async () => {
    const redlock = await redlockOn(nodes);
    for (const i of [0, 2, 4]) await nodes.nodes[i].pause();
    const error = (await redlock
      .acquire('paused-majority', { wait: 0 })
      .catch((e: unknown) => e)) as QuorumUnavailableError;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect(error.votes.filter((v) => v.outcome === 'timeout')).toHaveLength(3);
    expect(nodes.nodes[0].paused).toBe(true);
  });
});
