import { Controller, Get, Injectable, Param } from '@nestjs/common';
import request from 'supertest';
import { LockBusyError, Locked, RedlockModule, RedlockService } from '../../lib';
import { useRedisNodes } from '../support';
import { TEST_OPTIONS, closeApps, createApp, gate } from './helpers';

/** At most two exports at once across every instance. */
@Injectable()
class Exports {
  running = 0;
  permits: number[] = [];
  /** Called as each export begins (under its permit). */
  onRun?: () => void;
  constructor(readonly redlock: RedlockService) {}

  @Locked('exports', { permits: 2, wait: 0 })
  async run(until: Promise<void>): Promise<number> {
    this.running++;
    const permit = this.redlock.current()!.permit!;
    this.permits.push(permit);
    this.onRun?.();
    await until;
    this.running--;
    return permit;
  }
}

@Controller('exports')
class ExportsController {
  @Get(':id')
  @Locked('exports', { permits: 2, wait: 0 })
  async start(@Param('id') id: string): Promise<string> {
    return id;
  }
}

describe('@Locked(key, { permits }) in Nest applications (3 real nodes)', () => {
  const redisNodes = useRedisNodes(3, { afterEach: closeApps });

  const app = () =>
    createApp({
      imports: [RedlockModule.forRoot(redisNodes.urls, TEST_OPTIONS)],
      providers: [Exports],
      controllers: [ExportsController],
    });

  it('two instances share two permits: a third concurrent call is busy (409 over HTTP) until one frees', async () => {
    const [first, second] = await Promise.all([app(), app()]);
    const a = first.get(Exports);
    const b = second.get(Exports);
    const hold = gate();
    const bothRunning = gate();
    let began = 0;
    a.onRun = b.onRun = () => ++began === 2 && bothRunning.open();
    const running = [a.run(hold.promise), b.run(hold.promise)];
    await bothRunning.promise;
    expect(a.running + b.running).toBe(2);
    expect([...a.permits, ...b.permits].sort()).toEqual([0, 1]);
    await expect(a.run(hold.promise)).rejects.toBeInstanceOf(LockBusyError);
    await request(second.getHttpServer()).get('/exports/x').expect(409);
    hold.open();
    expect((await Promise.all(running)).sort()).toEqual([0, 1]);
    await request(second.getHttpServer()).get('/exports/y').expect(200, 'y');
  });
});
