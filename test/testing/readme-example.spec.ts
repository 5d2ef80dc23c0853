import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { Controller, INestApplication, Injectable, Module, Param, Post } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import type { Server } from 'node:http';
import { LockLostError, Locked, MemoryNode, RedlockModule, RedlockService, memoryNodes } from '../../lib';
import request from 'supertest';

// The code under test: a locked route and a job scheduled every second.
@Controller('orders')
class OrdersController {
  @Post(':id/settle')
  @Locked('order:<0>', { wait: 0 })
  settle(@Param('id') id: string): Promise<{ settled: string }> {
    return Promise.resolve({ settled: id }); // the settlement, under the lock
  }
}

const ticks: string[] = [];

@Injectable()
class ReportJob {
  @Cron('* * * * * *')
  @Locked('cron:report')
  run(): Promise<void> {
    ticks.push(new Date().toISOString());
    return Promise.resolve();
  }
}

@Module({ controllers: [OrdersController], providers: [ReportJob] })
class AppModule {}

// One app instance over shared in-memory nodes: instances given the same nodes contend as on Redis.
async function startApp(nodes: MemoryNode[]): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [ScheduleModule.forRoot(), RedlockModule.forRoot(nodes, { logger: false }), AppModule],
  }).compile();
  return moduleRef.createNestApplication().init();
}

describe('locks without Redis', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    jest.useRealTimers();
  });

  it('answers 409 while another holder has the order', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] }); // HTTP needs them
    const app = await startApp(memoryNodes());
    apps.push(app);
    const lock = await app.get(RedlockService).acquire('order:42');
    await request(app.getHttpServer() as Server)
      .post('/orders/42/settle')
      .expect(409);
    await lock.release();
    await request(app.getHttpServer() as Server)
      .post('/orders/42/settle')
      .expect(201, { settled: '42' });
  });

  it('runs each cron tick once across two instances', async () => {
    jest.useFakeTimers({ now: new Date('2030-01-01T00:00:00.500Z') });
    const nodes = memoryNodes();
    apps.push(await startApp(nodes), await startApp(nodes));
    ticks.length = 0;
    await jest.advanceTimersByTimeAsync(3_000);
    expect(ticks).toEqual([
      '2030-01-01T00:00:01.000Z',
      '2030-01-01T00:00:02.000Z',
      '2030-01-01T00:00:03.000Z',
    ]);
  });

  it('tells work whose lock was lost', async () => {
    jest.useFakeTimers();
    const nodes = memoryNodes();
    const app = await startApp(nodes);
    apps.push(app);
    const redlock = app.get(RedlockService);
    const work = redlock.using('report:daily', { ttl: 3_000 }, async (lock) => {
      nodes[0].loseData(); // two of three nodes restart empty: the lock is gone there
      nodes[1].loseData();
      await jest.advanceTimersByTimeAsync(2_000); // the next renewal finds it gone
      expect(lock.signal.aborted).toBe(true);
    });
    await expect(work).rejects.toBeInstanceOf(LockLostError);
  });
});
