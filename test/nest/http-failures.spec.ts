import { Controller, Get, Param } from '@nestjs/common';
import { EventEmitter, once } from 'node:events';
import request from 'supertest';
import { Locked, RedlockModule, RedlockService } from '../../lib';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp } from './helpers';

/**
 * Work that lasts until `signal` aborts, then rejects as Node's abortable APIs do (timers/promises, fs,
 * events): an AbortError whose cause is the signal's reason. No timer: the abort event ends it.
 */
const workUntilAborted = (signal: AbortSignal) => once(new EventEmitter(), 'never-emitted', { signal });

/** Resolves when a handler has started, so the test acts while it runs. */
let started: () => void = () => undefined;
const handlerStarted = () => new Promise<void>((resolve) => (started = resolve));

@Controller('jobs')
class JobsController {
  constructor(private readonly redlock: RedlockService) {}

  /** Works until its lock's signal aborts: rejects with an AbortError caused by the reason. */
  @Get(':id/run')
  @Locked('job:<0>', { ttl: 10_000 })
  async run(@Param('id') id: string) {
    started();
    await workUntilAborted(this.redlock.current()!.signal);
    return { id };
  }

  /** The same, with a short ttl: renewed while it runs, lost when a renewal finds its keys gone. */
  @Get(':id/short')
  @Locked('job:<0>', { ttl: 600 })
  async short(@Param('id') id: string) {
    started();
    const { signal } = this.redlock.current()!;
    await workUntilAborted(signal).catch(() => signal.throwIfAborted());
    return { id };
  }

  @Get('pool')
  @Locked('pool', { permits: 2, wait: 0 })
  async pool() {
    return { ok: true };
  }
}

/** Issue "nothing left behind" §3-4: how lock failures inside a handler answer over HTTP (LockBusyFilter). */
describe('lock failures during an HTTP request answer 503, naming the resource, never the nodes (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeApps });
  const start = () =>
    createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS })],
      controllers: [JobsController],
    });

  it('a lock revoked while the handler runs: 503, and the handler was stopped by its signal', async () => {
    const app = await start();
    const running = handlerStarted();
    const response = request(app.getHttpServer())
      .get('/jobs/7/run')
      .then((r) => r);
    await running;
    const outcome = await app.get(RedlockService).revoke('job:7', { reason: 'operator' });
    expect(outcome.revokedOn).toBe(3);
    const answer = await response;
    expect(answer.status).toBe(503);
    expect(answer.body).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'The lock on "job:7" was revoked while the request ran, so it was stopped; try again.',
    });
  });

  it('a lock lost while the handler runs (a renewal found its keys gone): 503', async () => {
    const app = await start();
    const running = handlerStarted();
    const response = request(app.getHttpServer())
      .get('/jobs/8/short')
      .then((r) => r);
    await running;
    await Promise.all(
      nodes.nodes.map(async (node) => {
        const admin = node.redis();
        await admin.del('redlock:{job:8}');
        admin.disconnect();
      }),
    );
    const answer = await response;
    expect(answer.status).toBe(503);
    expect(answer.body.message).toBe(
      'The lock on "job:8" was lost while the request ran, so it was stopped; try again.',
    );
  });

  it('a semaphore whose callers disagree on its permits: 503 without node addresses', async () => {
    const app = await start();
    const other = await app.get(RedlockService).acquire('pool', { permits: 3 });
    const answer = await request(app.getHttpServer()).get('/jobs/pool');
    expect(answer.status).toBe(503);
    expect(answer.body.message).toBe(
      '"pool" cannot be locked right now (its number of permits is being changed); try again later.',
    );
    expect(JSON.stringify(answer.body)).not.toContain('127.0.0.1');
    await app.get(RedlockService).release(other);
  });
});
