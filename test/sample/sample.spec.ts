import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { AppModule } from '../../sample/app.module';
import { ReportRunsRepository } from '../../sample/database/report-runs.repository';
import { StockRepository } from '../../sample/database/stock.repository';
import { HttpClient } from '../../sample/demo/http';
import { ZombieService } from '../../sample/fencing/zombie.service';
import { OrdersService } from '../../sample/orders/orders.service';
import type { SampleConfig } from '../../sample/sample.config';
import { useRedisNodes } from '../support';

/** The sample app, two instances in this process, against three real Redis nodes and one SQLite file. */
describe('sample app (two instances, 3 real nodes, one SQLite file)', () => {
  let dir: string;
  const apps: INestApplication[] = [];
  const http = new HttpClient();
  const nodes = useRedisNodes(3, {
    afterAll: async () => {
      http.close();
      await Promise.all(apps.map((app) => app.close()));
    },
    flushAfterEach: false,
  });

  const start = async (instance: string, overrides: Partial<SampleConfig> = {}) => {
    const config: SampleConfig = {
      port: 0,
      instance,
      redisNodes: nodes.urls,
      dbFile: path.join(dir, 'sample.db'),
      lockDisabled: false,
      lockTtl: 5_000,
      restartGuard: false, // the nodes are seconds old; the guard would rightly refuse for a ttl
      nodeTimeout: 500,
      workMs: 20,
      ...overrides,
    };
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.register(config)] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    apps.push(app);
    await app.listen(0, '127.0.0.1');
    return { app, url: (await app.getUrl()).replace('[::1]', '127.0.0.1') };
  };

  /** `count` purchases of `sku` at once, alternating between `urls`: the statuses (409s from the fence as 'stale'). */
  const burst = async (urls: string[], sku: string, count: number) => {
    const replies = await Promise.all(
      Array.from({ length: count }, (_, i) => http.post(`${urls[i % urls.length]}/orders`, { sku })),
    );
    return replies.map((reply) => (reply.body?.reason === 'stale-token' ? 'stale' : reply.status));
  };

  let a: { app: INestApplication; url: string };
  let b: { app: INestApplication; url: string };
  let stock: StockRepository;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redlock-sample-test-'));
    [a, b] = [await start('a'), await start('b')];
    stock = a.app.get(StockRepository);
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('GET /health is 200 with every node up', async () => {
    const reply = await http.get(`${a.url}/health`);
    expect(reply.status).toBe(200);
    expect(reply.body.details.redlock).toMatchObject({ status: 'up', quorum: 2 });
    expect(reply.body.details.redlock.nodes.map((node: { up: boolean }) => node.up)).toEqual([
      true,
      true,
      true,
    ]);
  });

  it('60 concurrent purchases over two instances sell exactly the 10 in stock', async () => {
    stock.restock('burst', 10);
    const statuses = await burst([a.url, b.url], 'burst', 60);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    // Busy or sold out; never refused by the fencing token: the lock alone kept the buyers apart.
    expect(statuses.filter((s) => s !== 201).every((s) => s === 409 || s === 410)).toBe(true);
    expect(stock.soldCount('burst')).toBe(10);
    expect(stock.find('burst')?.qty).toBe(0);
    const after = await http.post(`${b.url}/orders`, { sku: 'burst' });
    expect(after).toEqual({
      status: 410,
      body: expect.objectContaining({ message: '"burst" is sold out.' }),
    });
  });

  it('negative control: the same burst with LOCK_DISABLED oversells (the check above can fail)', async () => {
    const unlocked = [await start('u1', { lockDisabled: true }), await start('u2', { lockDisabled: true })];
    stock.restock('unlocked', 10);
    const statuses = await burst(
      unlocked.map((instance) => instance.url),
      'unlocked',
      60,
    );
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThan(10);
    expect(stock.soldCount('unlocked')).toBeGreaterThan(10);
  });

  it('the fencing guard refuses a token older than one the row has seen, at the claim and at the write', () => {
    stock.restock('fenced', 10);
    expect(stock.claim('fenced', 100)).toEqual({ outcome: 'claimed', qty: 10 });
    expect(stock.claim('fenced', 50)).toEqual({ outcome: 'stale', rowToken: 100 });
    expect(stock.claim('fenced', 200)).toEqual({ outcome: 'claimed', qty: 10 });
    // Token 100 read 10 before 200 claimed the row: its write would be a lost update.
    expect(stock.sellFenced('fenced', 9, 100, 'test')).toEqual({ outcome: 'stale', rowToken: 200 });
    expect(stock.sellFenced('fenced', 9, 200, 'test')).toEqual({ outcome: 'sold' });
    expect(stock.find('fenced')).toEqual({ sku: 'fenced', qty: 9, lastToken: 200 });
    expect(stock.soldCount('fenced')).toBe(1);
  });

  it('a holder paused past its ttl is refused by its token after another instance sold', async () => {
    stock.restock('zombie', 10);
    const paused = await a.app.get(ZombieService).pause('zombie');
    const sale = await b.app.get(OrdersService).purchase('zombie'); // waits for the paused lock to expire
    expect(sale.token).toBeGreaterThan(paused.token);
    const report = await a.app.get(ZombieService).resume('zombie');
    expect(report).toMatchObject({
      token: paused.token,
      lockExpired: true,
      outcome: 'rejected by fencing token',
      rowToken: sale.token,
    });
    expect(stock.find('zombie')?.qty).toBe(9);
    expect(stock.soldCount('zombie')).toBe(1);
  });

  it('the report job ran at most once per tick across the instances', async () => {
    const runs = a.app.get(ReportRunsRepository);
    const all = () => runs.runsBetween(0, Number.MAX_SAFE_INTEGER);
    // Three runs recorded (one SQLite file): checked as each instance's job records one.
    const spies: jest.SpyInstance[] = [];
    try {
      await new Promise<void>((resolve) => {
        const check = () => {
          if (all().length >= 3) resolve();
        };
        for (const app of apps) {
          const repository = app.get(ReportRunsRepository);
          const record = repository.record.bind(repository);
          spies.push(
            jest.spyOn(repository, 'record').mockImplementation((tick, instance) => {
              record(tick, instance);
              check();
            }),
          );
        }
        check();
      });
    } finally {
      spies.forEach((spy) => spy.mockRestore());
    }
    const ticks = all().map((run) => run.tick);
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(new Set(ticks).size).toBe(ticks.length);
  });
});
