import { Controller, Get } from '@nestjs/common';
import request from 'supertest';
import {
  AcquireReply,
  InvalidArgumentError,
  LockBusyError,
  LockQueueFullError,
  Locked,
  RedlockModule,
} from '../../lib';
import { CountingNode } from './helpers';
import { closeApps, createApp } from '../nest/helpers';
import { virtualCore } from './virtual-nodes';

/** The error's name a call rejected with, or 'resolved'. */
const ending = (call: Promise<unknown>) =>
  call.then(
    () => 'resolved',
    (error: Error) => error.name,
  );

/**
 * Issue "fair waiting" §3, bounded: `maxWaiting: n` lets at most n callers of an instance wait for the same
 * resources; the next one is refused at once with a `LockQueueFullError` (a `LockBusyError`), without asking
 * any node, and an HTTP route answers it with 429 and `Retry-After`.
 */
describe('maxWaiting: a cap on the callers of an instance waiting for one lock', () => {
  it('refuses the (n+1)-th waiter at once, without node traffic; the others are served in turn', async () => {
    const { clock, nodes, redlock } = virtualCore({ maxWaiting: 2 });
    const held = await redlock.acquire('hot', { ttl: 10_000 });
    const calls = () => nodes.map((node) => node.acquires);
    const waiters = [
      ending(redlock.acquire('hot', { wait: 5_000 })),
      ending(redlock.acquire('hot', { wait: 5_000 })),
    ];
    await clock.advance(1);
    const before = calls();
    const refused = redlock.acquire('hot', { wait: 5_000 });
    await expect(refused).rejects.toBeInstanceOf(LockQueueFullError);
    await expect(refused).rejects.toBeInstanceOf(LockBusyError);
    await expect(refused).rejects.toThrow(
      'Lock "hot" already has 2 callers of this instance waiting (maxWaiting: 2): refused at once',
    );
    expect(calls()).toEqual(before); // no node was asked for the refused one
    // Other resources, tryAcquire and a call's own larger cap are not affected.
    await (await redlock.acquire('cold', { wait: 5_000 })).release();
    expect(await redlock.tryAcquire('hot')).toBeNull();
    const third = ending(redlock.acquire('hot', { wait: 5_000, maxWaiting: 3 }));
    await held.release();
    await clock.advance(15_000);
    expect(await Promise.all(waiters)).toEqual(['resolved', 'LockBusyError']);
    expect(await third).toMatch(/resolved|LockBusyError/);
    await redlock.quit();
  });

  it('control: without maxWaiting every caller waits (none refused at once)', async () => {
    const { clock, redlock } = virtualCore();
    const held = await redlock.acquire('hot', { ttl: 10_000 });
    const waiters = Array.from({ length: 5 }, () => ending(redlock.acquire('hot', { wait: 5_000 })));
    await clock.advance(1);
    await held.release();
    await clock.advance(30_000);
    const endings = await Promise.all(waiters);
    expect(endings).not.toContain('LockQueueFullError');
    expect(endings[0]).toBe('resolved');
    await redlock.quit();
  });

  it.each([0, -1, 1.5, NaN, '5', null])('refuses maxWaiting %p with what it takes', async (value) => {
    const { nodes, redlock } = virtualCore();
    const refused = redlock.acquire('r', { maxWaiting: value as never });
    await expect(refused).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(refused).rejects.toThrow(
      /maxWaiting must be a whole number ≥ 1 .* or Infinity, got .*Example: maxWaiting: 50/,
    );
    expect(() => virtualCore({ maxWaiting: value as never })).toThrow(/maxWaiting must be a whole number/);
    expect(nodes.map((node) => node.acquires)).toEqual([0, 0, 0]);
    await redlock.quit();
  });
});

/** A node whose lock is always held by someone else: every waiter waits its whole `wait`. */
class AlwaysBusyNode extends CountingNode {
  override async acquire(): Promise<AcquireReply> {
    this.calls++;
    return { outcome: 'busy', holderTtl: 60_000 };
  }
}

@Controller('reports')
class ReportsController {
  @Get()
  @Locked('reports', { wait: 10_000, maxWaiting: 1 })
  async build() {
    return 'built';
  }
}

describe('maxWaiting over HTTP: 429 Too Many Requests with Retry-After', () => {
  afterAll(() => closeApps());

  it('the waiting request holds its place; the next one gets 429 at once', async () => {
    const nodes = ['a:1', 'b:1', 'c:1'].map((name) => new AlwaysBusyNode(name));
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes, { logger: false, restartGuard: false })],
      controllers: [ReportsController],
    });
    const server = app.getHttpServer();
    const waiting = request(server)
      .get('/reports')
      .then((r) => r);
    // The first request is waiting once the nodes were asked.
    while (nodes[0].calls === 0) await new Promise((resolve) => setImmediate(resolve));
    const refused = await request(server).get('/reports');
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.body).toEqual({
      statusCode: 429,
      message: '"reports" has too many requests waiting for it; try again shortly.',
      error: 'Too Many Requests',
    });
    await app.close();
    // The waiter was ended by shutdown (before the server's close waited for it), not by its 10 s wait.
    const ended = await waiting;
    expect(ended.status).toBe(503);
    expect(ended.body.message).toBe('The service is shutting down; try again.');
  });
});
