import { performance } from 'node:perf_hooks';
import { LockBusyError, QuorumUnavailableError } from '../../lib';
import { RedisNodes, startRedisNodes } from '../support';
import { closeAll, delay, eventually, redlockOn, valuesOnNodes } from './helpers';

describe('Redlock under node faults (5 real nodes)', () => {
  let nodes: RedisNodes;

  beforeAll(async () => {
    nodes = await startRedisNodes(5);
  });
  afterEach(async () => {
    await closeAll();
    for (const node of nodes.nodes) {
      if (node.paused) await node.resume();
      if (!node.running) await node.start();
    }
    await nodes.flushAll();
  });
  afterAll(async () => {
    await closeAll();
    await nodes?.stop();
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
    // runs right after it.
    const clean = await eventually(async () => (await valuesOnNodes(nodes, key))[4] === null, 3_000);
    expect(clean).toBe(true);
  });

  it('decides without waiting for paused nodes: 2 of 5 paused still locks while they stay paused', async () => {
    const redlock = await redlockOn(nodes);
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    const lock = await redlock.acquire('paused-minority', { wait: 0 });
    expect(nodes.nodes[1].paused && nodes.nodes[2].paused).toBe(true);
    expect(lock.remainingTime).toBeGreaterThan(0);
    const votes = (await redlock.release(lock)).votes;
    expect(votes.filter((v) => v.outcome === 'timeout')).toHaveLength(2);
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

  it('answers that arrive after the ttl give a failure, never an expired lock', async () => {
    // A generous per-node timeout, so the late answers still count towards the quorum.
    const redlock = await redlockOn(nodes, { nodeTimeout: 5_000 });
    const ttl = 150;
    for (const i of [0, 1, 2]) await nodes.nodes[i].pause();
    const attempt = redlock.acquire('slow', { ttl, wait: 0 }).catch((e: unknown) => e);
    await delay(ttl + 100);
    for (const i of [0, 1, 2]) await nodes.nodes[i].resume();
    const error = await attempt;
    expect(error).toBeInstanceOf(QuorumUnavailableError);
    expect((error as Error).message).toMatch(/leaving no validity/);
    // Every key it wrote was removed again.
    expect(
      await eventually(async () => (await valuesOnNodes(nodes, 'redlock:{slow}')).every((v) => v === null)),
    ).toBe(true);
  });
});
