import { once } from 'node:events';
import { RedlockEventMap } from '../../lib';
import { useRedisNodes } from '../support';
import { closeAll, redlockOn } from './helpers';

describe('events (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeAll, flushAfterEach: false });

  it('reports acquired, extended, released, busy, lost and node errors; a throwing listener changes nothing', async () => {
    const redlock = await redlockOn(nodes, { fencing: true });
    const seen: { event: keyof RedlockEventMap; payload: unknown }[] = [];
    for (const event of ['acquired', 'extended', 'released', 'busy', 'lost', 'node-error'] as const) {
      redlock.on(event, (payload) => seen.push({ event, payload }));
      redlock.on(event, () => {
        throw new Error('a broken metrics listener');
      });
    }
    const lock = await redlock.acquire('evented');
    await lock.extend();
    expect(await redlock.tryAcquire('evented')).toBeNull();
    await lock.release();
    await redlock
      .using('evented', { ttl: 600 }, async (lock) => {
        await nodes.flushAll();
        // The next renewal finds the keys gone: the lock is lost (its signal aborts).
        if (!lock.signal.aborted) await once(lock.signal, 'abort');
      })
      .catch(() => undefined);
    await nodes.nodes[2].kill();
    const degraded = await redlock.acquire('evented', { wait: 0 });
    await degraded.release();
    await nodes.nodes[2].start();

    const events = seen.map((entry) => entry.event);
    expect(events.slice(0, 4)).toEqual(['acquired', 'extended', 'busy', 'released']);
    expect(events).toContain('lost');
    expect(seen[0].payload).toMatchObject({
      resources: ['evented'],
      attempts: 1,
      fencingToken: lock.fencingToken,
    });
    expect(seen[3].payload).toEqual({
      resources: ['evented'],
      releasedOn: 2, // when release() resolved: the quorum of 3 nodes (the third answers on `settled`)
      heldFor: expect.any(Number),
      elapsed: expect.any(Number),
    });
    expect((seen[3].payload as RedlockEventMap['released']).heldFor).toBeGreaterThan(0);
    const nodeError = seen.find((entry) => entry.event === 'node-error')!
      .payload as RedlockEventMap['node-error'];
    expect(nodeError).toMatchObject({ node: `127.0.0.1:${nodes.nodes[2].port}`, operation: 'acquire' });
    expect(nodeError.error).toBeInstanceOf(Error);
  });
});
