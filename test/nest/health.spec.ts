import { Controller, Get, LoggerService } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import request from 'supertest';
import { RedlockHealthIndicator, RedlockModule, RedlockService } from '../../lib';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp } from './helpers';

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlock: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.redlock.isHealthy('redlock', { timeout: 300 })]);
  }
}

describe('health indicator, events and node-error warnings (3 real nodes)', () => {
  const nodes = useRedisNodes(3, {
    afterEach: async () => {
      await closeApps();
      for (const node of nodes.nodes) if (!node.running) await node.start();
    },
    flushAfterEach: false,
  });

  it('GET /health through @nestjs/terminus: up with a quorum, 503 down without, per-node details', async () => {
    const app = await createApp({
      imports: [TerminusModule, RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      controllers: [HealthController],
    });
    const up = await request(app.getHttpServer()).get('/health').expect(200);
    expect(up.body.details.redlock).toMatchObject({ status: 'up', quorum: 2, held: 0, waiting: 0 });
    // The instance's held locks are counted in the report.
    const service = app.get(RedlockService);
    const lock = await service.acquire('health:held');
    const holding = await request(app.getHttpServer()).get('/health').expect(200);
    expect(holding.body.details.redlock).toMatchObject({ held: 1, waiting: 0 });
    await lock.release();
    expect(up.body.details.redlock.nodes).toHaveLength(3);
    expect(up.body.details.redlock.nodes[0]).toMatchObject({ up: true, guardRemaining: 0 });

    await nodes.nodes[0].kill();
    await nodes.nodes[1].kill();
    const down = await request(app.getHttpServer()).get('/health').expect(503);
    expect(down.body.error.redlock.status).toBe('down');
    expect(down.body.error.redlock.nodes[0]).toMatchObject({ up: false, error: expect.any(String) });
  });

  it('forwards core events, and warns about a failing node once', async () => {
    const warnings: string[] = [];
    const logger: LoggerService = {
      log: () => undefined,
      error: () => undefined,
      warn: (m: string) => warnings.push(m),
    };
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger })],
    });
    const service = app.get(RedlockService);
    const acquired: string[][] = [];
    service.on('acquired', ({ resources }) => acquired.push([...resources]));

    await nodes.nodes[2].kill();
    for (let i = 0; i < 5; i++) await service.using(`warn:${i}`, async () => undefined);
    expect(acquired).toHaveLength(5);
    const nodeWarnings = warnings.filter((w) => w.includes(`127.0.0.1:${nodes.nodes[2].port}`));
    expect(nodeWarnings).toHaveLength(1); // 10 failed commands (acquire + release, 5 times), one warning
    // It says what to check, and what locking needs meanwhile (no claim that a majority answers).
    expect(nodeWarnings[0]).toMatch(/failed an (acquire|release): .*Check that its address is right/);
    expect(nodeWarnings[0]).toMatch(
      /locks need a majority of the other nodes, and fail when fewer answer\. Its next errors are not logged/,
    );
    expect(nodeWarnings[0]).not.toMatch(/await redlock\.connect\(\)/);
  });
});
