import { ArgumentsHost, Body, Controller, Get, NotFoundException, Param, Post } from '@nestjs/common';
import { Observable, lastValueFrom, of } from 'rxjs';
import request from 'supertest';
import { LockBusyError, LockBusyFilter, Locked, RedlockModule, RedlockService } from '../../lib';
import { nodeUptimes, useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, keyOf, valuesOnNodes } from './helpers';

@Controller('orders')
class OrdersController {
  constructor(private readonly redlock: RedlockService) {}

  @Get(':id')
  @Locked('order:<0>', { wait: 0 })
  async get(@Param('id') id: string) {
    if (id === 'missing') throw new NotFoundException(`Order ${id} not found`);
    return { id, lockedBy: this.redlock.current()?.resources };
  }

  @Locked('order:<0>', { wait: 0 }) // above the route decorator this time
  @Post(':id/pay')
  async pay(@Param('id') id: string, @Body() body: { amount: number }) {
    return { id, amount: body.amount };
  }

  @Get(':id/events')
  @Locked('order:<0>', { wait: 0 })
  events(@Param('id') id: string): Observable<{ id: string }> {
    return of({ id });
  }
}

describe('@Locked on HTTP routes (platform-express, 3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeApps });

  const start = (options = {}) =>
    createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, ...options })],
      controllers: [OrdersController],
    });

  it('runs the handler under the lock when it is free (either decorator order)', async () => {
    const app = await start();
    await request(app.getHttpServer())
      .get('/orders/1')
      .expect(200, { id: '1', lockedBy: ['order:1'] });
    await request(app.getHttpServer())
      .post('/orders/1/pay')
      .send({ amount: 5 })
      .expect(201, { id: '1', amount: 5 });
    await request(app.getHttpServer()).get('/orders/1/events').expect(200, { id: '1' });
  });

  it('busy: 409 Conflict naming the resource (and not the nodes), for every kind of handler', async () => {
    const app = await start();
    const lock = await app.get(RedlockService).acquire('order:42');
    for (const call of [
      request(app.getHttpServer()).get('/orders/42'),
      request(app.getHttpServer()).post('/orders/42/pay').send({ amount: 1 }),
      request(app.getHttpServer()).get('/orders/42/events'),
    ]) {
      const response = await call;
      expect(response.status).toBe(409);
      expect(response.body).toEqual({
        statusCode: 409,
        error: 'Conflict',
        message: '"order:42" is locked by another operation in progress; try again later.',
      });
      expect(JSON.stringify(response.body)).not.toContain('127.0.0.1');
    }
    await app.get(RedlockService).release(lock);
  });

  it("the handler's NotFoundException stays a 404, and the lock is released", async () => {
    const app = await start();
    const response = await request(app.getHttpServer()).get('/orders/missing').expect(404);
    expect(response.body.message).toBe('Order missing not found');
    expect(await valuesOnNodes(nodes, keyOf('order:missing'))).toEqual([null, null, null]);
  });

  it('no quorum: 503 Service Unavailable naming the resource, without Retry-After when nothing says when', async () => {
    const app = await start({ nodeTimeout: 50 });
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    try {
      const response = await request(app.getHttpServer()).get('/orders/7');
      expect(response.status).toBe(503);
      expect(response.body).toEqual({
        statusCode: 503,
        error: 'Service Unavailable',
        message: '"order:7" cannot be locked right now (too few lock servers available); try again later.',
      });
      expect(response.headers['retry-after']).toBeUndefined();
      expect(JSON.stringify(response.body)).not.toContain('127.0.0.1');
    } finally {
      await nodes.nodes[1].resume();
      await nodes.nodes[2].resume();
    }
  });

  it('nodes inside the restart guard: 503 with Retry-After = the time until a quorum is past its window', async () => {
    const window = 600_000; // far longer than the nodes of this file have been up
    const app = await start({ restartGuard: window });
    const uptimes = await nodeUptimes(nodes);
    const response = await request(app.getHttpServer()).get('/orders/8');
    expect(response.status).toBe(503);
    const retryAfter = Number(response.headers['retry-after']);
    // The quorum-th shortest wait, in whole seconds: between window − the longest uptime (−1 s taken off) and the window.
    expect(retryAfter).toBeGreaterThanOrEqual(window / 1000 - Math.max(...uptimes) - 1);
    expect(retryAfter).toBeLessThanOrEqual(window / 1000);
  });

  it('busyFilter: false leaves LockBusyError to Nest (a 500) or to your own filter', async () => {
    const app = await start({ busyFilter: false });
    const lock = await app.get(RedlockService).acquire('order:43');
    await request(app.getHttpServer()).get('/orders/43').expect(500);
    await app.get(RedlockService).release(lock);
  });
});

describe('LockBusyFilter outside HTTP', () => {
  const busy = new LockBusyError(['job:1'], [{ node: '10.0.0.1:6379', outcome: 'busy' }], 1, 0);
  const hostOf = (type: string, client?: object) =>
    ({ getType: () => type, switchToWs: () => ({ getClient: () => client }) }) as unknown as ArgumentsHost;
  const message = '"job:1" is locked by another operation in progress; try again later.';

  it('microservices: an error like an RpcException', async () => {
    const result = new LockBusyFilter().catch(busy, hostOf('rpc')) as Observable<never>;
    await expect(lastValueFrom(result)).rejects.toEqual({ status: 'error', message, statusCode: 409 });
  });

  it('websockets: an `exception` event like the default websocket filter', () => {
    const events: unknown[] = [];
    new LockBusyFilter().catch(busy, hostOf('ws', { emit: (...event: unknown[]) => events.push(event) }));
    expect(events).toEqual([['exception', { status: 'error', message, statusCode: 409 }]]);
  });

  it('other contexts (GraphQL, ...): the original error, as if no filter applied', () => {
    expect(() => new LockBusyFilter().catch(busy, hostOf('graphql'))).toThrow(busy);
  });
});
