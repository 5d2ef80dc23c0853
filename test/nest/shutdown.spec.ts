import { Injectable } from '@nestjs/common';
import { Locked, RedlockError, RedlockModule, RedlockService } from '../../lib';
import { RedisNodes, startRedisNodes } from '../support';
import {
  RecordingLogger,
  TEST_OPTIONS,
  clientsOnNodes,
  closeApp,
  closeApps,
  createApp,
  eventually,
  gate,
  keyOf,
  valuesOnNodes,
} from './helpers';

@Injectable()
class Jobs {
  constructor(readonly redlock: RedlockService) {}

  @Locked('job:<0>', { ttl: 60_000 })
  async run(id: string, until: Promise<void>, entered: () => void) {
    const lock = this.redlock.current()!;
    entered();
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

describe('shutdown (3 real nodes)', () => {
  let nodes: RedisNodes;

  beforeAll(async () => {
    nodes = await startRedisNodes(3);
  });
  afterEach(async () => {
    for (const node of nodes.nodes) if (node.paused) await node.resume();
    await closeApps();
    await nodes.flushAll();
  });
  afterAll(async () => {
    await nodes?.stop();
  });

  it('releases the locks still held, closes its connections, and leaves no open handles', async () => {
    const before = openHandles();
    const clientsBefore = await clientsOnNodes(nodes);
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [Jobs],
    });
    const service = app.get(RedlockService);
    const held = await service.acquire('manual', { ttl: 60_000 });
    const entered = gate();
    const leave = gate();
    const running = app.get(Jobs).run('1', leave.promise, entered.open);
    await entered.promise;
    expect(await valuesOnNodes(nodes, keyOf('job:1'))).not.toContain(null);

    await closeApp(app);
    // Both locks are gone from every node long before their 60 s ttl.
    expect(await valuesOnNodes(nodes, keyOf('manual'))).toEqual([null, null, null]);
    expect(await valuesOnNodes(nodes, keyOf('job:1'))).toEqual([null, null, null]);
    expect(held.isReleased).toBe(true);

    // The work that outlived the application finishes normally (its lock released, so no longer current);
    // its own release is then a no-op.
    leave.open();
    expect(await running).toEqual([true, undefined]);

    expect(
      await eventually(async () =>
        (await clientsOnNodes(nodes)).every((c, i) => c.length === clientsBefore[i].length),
      ),
    ).toBe(true);
    expect(
      await eventually(() => {
        const after = openHandles();
        return after.sockets <= before.sockets && after.timers <= before.timers;
      }),
    ).toBe(true);
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

  it('gives up releasing after shutdownTimeout when the nodes do not answer, and still closes', async () => {
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
      'Releasing the locks still held did not finish within shutdownTimeout (100 ms); their keys expire with their ttl.',
    ]);
  });
});
