import { LockBusyError, LockRevokedError, PermitCountMismatchError, memoryNodes } from '../../lib';
import { useMemoryNodes } from './helpers';

/**
 * In-memory nodes (lib/testing) through the public Redlock API, on real timers, with no Redis: what the Lua
 * scripts do on Redis, the nodes do here — exclusion, read-write locks, permits and their limit record,
 * fencing, extension, release announcements, inspection, revocation, batched renewal.
 */
describe('memoryNodes(): the lock scripts in memory, through the public API', () => {
  const { nodes, instance } = useMemoryNodes();

  it('makes three nodes by default, named memory-1..3, and as many as asked', () => {
    expect(nodes.map((node) => node.name)).toEqual(['memory-1', 'memory-2', 'memory-3']);
    expect(memoryNodes(5, { name: 'lock' }).map((node) => node.name)).toEqual([
      'lock-1',
      'lock-2',
      'lock-3',
      'lock-4',
      'lock-5',
    ]);
  });

  it('are also in the entry without Nest (nestjs-redlock/core)', async () => {
    const core = await import('../../lib/standalone');
    expect(core.memoryNodes).toBe(memoryNodes);
    const redlock = new core.Redlock(core.memoryNodes(), { logger: false });
    const lock = await redlock.acquire('core-entry');
    await lock.release();
    await redlock.quit();
  });

  it('a lock excludes another instance until released; the owner value is on every node', async () => {
    const a = instance();
    const b = instance();
    const lock = await a.acquire('order:1', { ttl: 10_000 });
    expect(nodes.map((node) => node.peek('redlock:{order:1}'))).toEqual(Array(3).fill(lock.value));
    expect(await b.tryAcquire('order:1')).toBeNull();
    await expect(b.acquire('order:1', { wait: 0 })).rejects.toBeInstanceOf(LockBusyError);
    await lock.release();
    expect(nodes.map((node) => node.peek('redlock:{order:1}'))).toEqual(Array(3).fill(undefined));
    const next = await b.tryAcquire('order:1');
    expect(next).not.toBeNull();
    await next!.release();
  });

  it('readers share a resource and keep a writer out; the writer gets it once they release', async () => {
    const a = instance();
    const b = instance();
    const readers = [await a.acquire('doc', { mode: 'read' }), await b.acquire('doc', { mode: 'read' })];
    expect(await a.tryAcquire('doc', { mode: 'write' })).toBeNull();
    for (const reader of readers) await reader.release();
    const writer = await a.acquire('doc', { mode: 'write' });
    expect(await b.tryAcquire('doc', { mode: 'read' })).toBeNull();
    await writer.release();
  });

  it('permits: n holders at once, the next is busy; another number of permits is refused', async () => {
    const a = instance();
    const b = instance();
    const held = [await a.acquire('pool', { permits: 2 }), await b.acquire('pool', { permits: 2 })];
    expect(await b.tryAcquire('pool', { permits: 2 })).toBeNull();
    await expect(b.acquire('pool', { permits: 3, wait: 0 })).rejects.toBeInstanceOf(PermitCountMismatchError);
    await held[0].release();
    const third = await b.acquire('pool', { permits: 2 });
    await Promise.all([third.release(), held[1].release()]);
  });

  it('fencing tokens grow from one holder to the next', async () => {
    const a = instance({ fencing: true });
    const first = await a.acquire('fenced');
    await first.release();
    const second = await instance({ fencing: true }).acquire('fenced');
    expect(second.fencingToken!).toBeGreaterThan(first.fencingToken!);
    await second.release();
  });

  it('extend() renews the keys on the nodes', async () => {
    const lock = await instance().acquire('long', { ttl: 1_000 });
    await lock.extend(60_000);
    expect(lock.remainingTime).toBeGreaterThan(50_000);
    const [reading] = (await nodes[0].inspect(['redlock:{long}'])).keys;
    expect(reading.type === 'string' && reading.pttl).toBeGreaterThan(59_000);
    await lock.release();
  });

  it('a release announcement wakes a waiter at once (no polling)', async () => {
    const a = instance();
    const b = instance();
    const lock = await a.acquire('queue', { ttl: 60_000 });
    const attempts = jest.spyOn(nodes[0], 'acquire');
    const waiting = b.acquire('queue', { wait: 30_000 });
    // Refused, the waiter subscribes to the release, tries once more and sleeps: a 60 s ttl outlasts the test
    // unless the announcement wakes it.
    await waitUntil(() => attempts.mock.calls.length >= 2);
    await new Promise((resolve) => setImmediate(resolve));
    await lock.release();
    const next = await waiting;
    expect(b.stats.wokenByRelease).toBeGreaterThanOrEqual(1);
    await next.release();
  });

  it('inspect() and holders() show the holder; revoke() frees the lock and aborts its signal', async () => {
    const holder = instance({ owner: 'worker' });
    const admin = instance({ owner: 'admin' });
    await holder.connect();
    const lock = await holder.acquire('stuck', { ttl: 60_000 });
    const inspection = await admin.inspect('stuck');
    expect(inspection.state).toBe('held');
    expect(inspection.holders.map((h) => h.owner)).toEqual(['worker']);
    expect((await admin.holders({ prefix: 'st' })).map((held) => held.resource)).toEqual(['stuck']);
    const aborted = new Promise<unknown>((resolve) =>
      lock.signal.addEventListener('abort', () => resolve(lock.signal.reason)),
    );
    const outcome = await admin.revoke('stuck', { reason: 'operator' });
    expect(outcome.revokedOn).toBe(3);
    const reason = await aborted;
    expect(reason).toBeInstanceOf(LockRevokedError);
    expect((reason as LockRevokedError).reason).toBe('operator');
    expect((await admin.inspect('stuck')).state).toBe('free');
  });
});

/** Resolves once `condition()` holds, checking after each macrotask (no fixed sleep). */
async function waitUntil(condition: () => boolean, turns = 100_000): Promise<void> {
  for (let i = 0; i < turns; i++) {
    if (condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the condition never held');
}
