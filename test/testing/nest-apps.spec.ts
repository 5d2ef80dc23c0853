import { Injectable, INestApplication, Module } from '@nestjs/common';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { Locked, MemoryNode, RedlockModule, memoryNodes } from '../../lib';

/**
 * Two Nest apps over one group of in-memory nodes, under fake timers: the README's "once per tick" is not
 * vacuous — both instances fire every tick and ask the nodes, and only one runs it.
 */
const runs: string[] = [];

@Injectable()
class TickJob {
  @Cron('* * * * * *')
  @Locked('cron:tick')
  run(): Promise<void> {
    runs.push(new Date().toISOString());
    return Promise.resolve();
  }
}

@Module({ providers: [TickJob] })
class JobModule {}

async function startApp(nodes: MemoryNode[], owner: string): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [ScheduleModule.forRoot(), RedlockModule.forRoot(nodes, { logger: false, owner }), JobModule],
  }).compile();
  return moduleRef.createNestApplication().init();
}

describe('two Nest apps sharing in-memory nodes', () => {
  afterEach(() => jest.useRealTimers());

  it('both fire every tick and contend on the nodes; each tick runs once', async () => {
    jest.useFakeTimers({ now: new Date('2030-01-01T00:00:00.500Z') });
    const nodes = memoryNodes();
    const asked = jest.spyOn(nodes[0], 'acquire');
    const apps = [await startApp(nodes, 'one'), await startApp(nodes, 'two')];
    runs.length = 0;
    await jest.advanceTimersByTimeAsync(5_000);
    expect(runs).toHaveLength(5);
    const owners = asked.mock.calls
      .filter(([request]) => request.keys.some((key) => key.includes('cron:tick')))
      .map(([request]) => request.owner.split(':').pop());
    expect(owners.filter((label) => label === 'one').length).toBeGreaterThanOrEqual(5);
    expect(owners.filter((label) => label === 'two').length).toBeGreaterThanOrEqual(5);
    await Promise.all(apps.map((app) => app.close()));
  });
});
