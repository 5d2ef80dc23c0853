import { Injectable } from '@nestjs/common';
import { Lock, LockBusyError, Locked, RedlockError, RedlockModule, RedlockService } from '../../lib';
import { createHook } from 'node:async_hooks';
import { once } from 'node:events';
import { TcpProxy, startTcpProxy, useRedisNodes } from '../support';
import {
  RecordingLogger,
  TEST_OPTIONS,
  clientsOnNodes,
  closeApp,
  closeApps,
  createApp,
  gate,
  keyOf,
  valuesOnNodes,
} from './helpers';

@Injectable()
class Jobs {
  constructor(readonly redlock: RedlockService) {}

  @Locked('job:<0>', { ttl: 60_000, wait: 0 })
  async run(id: string, until: Promise<void>, entered: (lock: Lock) => void) {
    const lock = this.redlock.current()!;
    entered(lock);
    await until;
    return [lock.isReleased, this.redlock.current()];
  }
}

/** How many sockets and timers the process has open. */
function openHandles(): { sockets: number; timers: number } {
  const info = process.getActiveResourcesInfo();
  return {
    sockets: info.filter((type) => type === 'TCPSocketWrap').length,
    timers: info.filter((type) => type === 'Timeout').length,
  };
}

/**
 * Resolves once `done()` holds: checked now, and again each time a resource of this process (a socket, a
 * timer...) is destroyed, as async_hooks reports it, since only that can make it true.
 */
function onceHandles(done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const hook = createHook({
      destroy() {
        if (!done()) return;
        hook.disable();
        resolve();
      },
    }).enable();
    if (done()) {
      hook.disable();
      resolve();
    }
  });
}

describe('shutdown (3 real nodes)', () => {
  const nodes = useRedisNodes(3, {
    afterEach: async () => {
      for (const node of nodes.nodes) if (node.paused) await node.resume();
      await closeApps();
      await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
    },
  });
  /** Proxies in front of the nodes, closed after each test. */
  const proxies: TcpProxy[] = [];

  it('drains: waits for running locked work, keeps its key meanwhile, aborts its signal, then releases', async () => {
    // The applications reach the nodes through proxies: each of their connections is seen to close there.
    proxies.push(...(await Promise.all(nodes.nodes.map((node) => startTcpProxy(node.port)))));
    const urls = proxies.map((proxy) => proxy.url);
    const before = openHandles();
    const clientsBefore = await clientsOnNodes(nodes);
    const app = await createApp({
      imports: [RedlockModule.forRoot(urls, { ...TEST_OPTIONS, shutdownTimeout: 10_000 })],
      providers: [Jobs],
    });
    const service = app.get(RedlockService);
    const held = await service.acquire('manual', { ttl: 60_000 });
    // Its connections (lock client and subscriber on each node) go through the proxies.
    expect(proxies.map((proxy) => proxy.open > 0)).toEqual([true, true, true]);
    const entered = gate();
    const leave = gate();
    const running = app.get(Jobs).run('1', leave.promise, entered.open);
    await entered.promise;
    const signal = held.signal;

    let closed = false;
    const closing = closeApp(app).then(() => (closed = true));
    // Shutdown began: the signal says so, the keys stay while the work runs, and close() waits.
    if (!signal.aborted) await once(signal, 'abort');
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).name).toBe('ShutdownError');
    expect(closed).toBe(false);
    expect(await valuesOnNodes(nodes, keyOf('job:1'))).not.toContain(null);
    expect(await valuesOnNodes(nodes, keyOf('manual'))).not.toContain(null);
    // Another instance cannot enter the section while it drains (the checker of the negative control below).
    const other = await createApp({
      imports: [RedlockModule.forRoot(urls, TEST_OPTIONS)],
      providers: [Jobs],
    });
    await expect(other.get(Jobs).run('1', Promise.resolve(), () => undefined)).rejects.toBeInstanceOf(
      LockBusyError,
    );
    await closeApp(other);
    // All the while (another application started, refused and closed) close() kept waiting for the work.
    expect(closed).toBe(false);

    // The work finishes under its lock; the manual lock is released by its owner.
    leave.open();
    expect(await running).toEqual([false, expect.anything()]);
    await service.release(held);
    await closing;
    expect(await valuesOnNodes(nodes, keyOf('job:1'))).toEqual([null, null, null]);
    expect(await valuesOnNodes(nodes, keyOf('manual'))).toEqual([null, null, null]);

    // Every connection the two applications opened was closed, and each node let go of it (the proxy forgets
    // a connection ended cleanly once the node ended its side too): the nodes list the clients they had.
    await Promise.all(proxies.map((proxy) => proxy.drained()));
    expect((await clientsOnNodes(nodes)).map((c) => c.length)).toEqual(clientsBefore.map((c) => c.length));
    // And the process let go of their sockets and timers (each handle is released after its close).
    await onceHandles(() => {
      const after = openHandles();
      return after.sockets <= before.sockets && after.timers <= before.timers;
    });
  });

  it('work still running after shutdownTimeout keeps its key (left to expire) and is named in a warning', async () => {
    const logger = new RecordingLogger();
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger, shutdownTimeout: 200 })],
      providers: [Jobs],
    });
    const entered = gate();
    const leave = gate();
    const running = app.get(Jobs).run('2', leave.promise, entered.open);
    await entered.promise;
    await closeApp(app);
    // Never released under running work: the key is still on every node once close() resolved.
    expect(await valuesOnNodes(nodes, keyOf('job:2'))).not.toContain(null);
    expect(logger.messages('warn')).toEqual([
      'Work still held 1 lock after shutdownTimeout (200 ms): "job:2". They are not released under work that ' +
        'may still be running; their keys expire with their ttl.',
    ]);
    leave.open();
    // It finished while its keys were still held: it was protected and resolves.
    expect((await running)[0]).toBe(false);
  });

  it('negative control: releasing the lock of running work (the old shutdown) lets another instance in', async () => {
    const first = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Jobs],
    });
    const second = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Jobs],
    });
    let held: Lock | undefined;
    const entered = gate();
    const leave = gate();
    const running = first.get(Jobs).run('3', leave.promise, (lock) => {
      held = lock;
      entered.open();
    });
    await entered.promise;
    await first.get(RedlockService).release(held!);
    // The same check as in the drain test: here the other instance does get in while the first is inside.
    await expect(second.get(Jobs).run('3', Promise.resolve(), () => undefined)).resolves.toBeDefined();
    leave.open();
    await running;
  });

  it('refuses new locks once shut down, with a clear error', async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Jobs],
    });
    const service = app.get(RedlockService);
    const jobs = app.get(Jobs);
    await closeApp(app);
    const error = await service.acquire('late').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedlockError);
    expect((error as Error).message).toBe(
      'Cannot lock "late": the application is shutting down (RedlockService was closed).',
    );
    await expect(jobs.run('2', Promise.resolve(), () => undefined)).rejects.toThrow(
      /Cannot lock "job:2": the application is shutting down/,
    );
  });

  it('a lock from acquire() released through its own lock.release() (or `await using`) is not waited for', async () => {
    const logger = new RecordingLogger();
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger, shutdownTimeout: 5_000 })],
    });
    const service = app.get(RedlockService);
    const lock = await service.acquire('shortcut', { ttl: 60_000 });
    await lock.release();
    {
      await using disposed = await service.acquire('disposed', { ttl: 60_000 });
      void disposed;
    }
    const t0 = Date.now();
    await closeApp(app);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(logger.messages('warn')).toEqual([]);
  });

  it('gives up waiting after shutdownTimeout for a lock its owner never releases, and still closes', async () => {
    const logger = new RecordingLogger();
    const app = await createApp({
      imports: [
        RedlockModule.forRoot(nodes.urls, {
          ...TEST_OPTIONS,
          logger,
          nodeTimeout: 1_500,
          shutdownTimeout: 100,
        }),
      ],
    });
    await app.get(RedlockService).acquire('stuck', { ttl: 60_000 });
    for (const node of nodes.nodes) await node.pause();
    await closeApp(app);
    expect(logger.messages('warn')).toEqual([
      'Work still held 1 lock after shutdownTimeout (100 ms): "stuck". They are not released under work that ' +
        'may still be running; their keys expire with their ttl.',
    ]);
  });
});
