import { Injectable } from '@nestjs/common';
import { Cron, ScheduleModule, SchedulerRegistry } from '@nestjs/schedule';
import { Locked, RedlockModule, RedlockService } from '../../lib';
import { useRedisNodes } from '../support';
import { RecordingLogger, TEST_OPTIONS, closeApps, createApp } from '../nest/helpers';

/** Every run of a task: which task, whether it ran under its lock, and the second of its tick. */
const runs: { task: string; locked: boolean; tick: number }[] = [];
/** Every skip of a task (its lock's 'busy' event on either instance), with the second of its tick. */
const skips: { task: string; tick: number }[] = [];
/** Called after every run and every skip. */
let progressed = (): void => undefined;

const TASKS = ['above', 'below'];
const tickNow = () => Math.floor(Date.now() / 1_000);

/**
 * The body returns at once: the lock is kept after it until shortly before the next tick by @Locked itself
 * (`oncePerTick`, the default on a scheduled method), so the other instance's timer for the same tick finds
 * it held and skips.
 */
async function work(task: string, service: RedlockService) {
  runs.push({ task, locked: service.current() !== undefined, tick: tickNow() });
  progressed();
}

/** A tick of `task` is settled once one instance ran it and the other skipped it. */
const settled = (task: string, tick: number) =>
  runs.some((r) => r.task === task && r.tick === tick) &&
  skips.some((s) => s.task === task && s.tick === tick);

@Injectable()
class CronAbove {
  constructor(private readonly redlock: RedlockService) {}

  @Cron('*/1 * * * * *', { name: 'cron-above' })
  @Locked('tick:above', { onBusy: 'skip' })
  async tick() {
    await work('above', this.redlock);
  }
}

@Injectable()
class CronBelow {
  constructor(private readonly redlock: RedlockService) {}

  @Locked('tick:below', { onBusy: 'skip' })
  @Cron('*/1 * * * * *', { name: 'cron-below' })
  async tick() {
    await work('below', this.redlock);
  }
}

describe('@Cron with @Locked on two instances (real scheduler, 3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps, flushAfterEach: false });
  const loggers = [new RecordingLogger(), new RecordingLogger()];
  let scheduled: string[][];

  beforeAll(async () => {
    const apps = await Promise.all(
      loggers.map((logger) =>
        createApp({
          imports: [ScheduleModule.forRoot(), RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger })],
          providers: [CronAbove, CronBelow],
        }),
      ),
    );
    scheduled = apps.map((app) => [...app.get(SchedulerRegistry).getCronJobs().keys()].sort());
    for (const app of apps) {
      app.get(RedlockService).on('busy', ({ resources }) => {
        const task = TASKS.find((t) => resources.includes(`tick:${t}`));
        if (task) skips.push({ task, tick: tickNow() });
        progressed();
      });
    }
    // Watch the ticks themselves: three settled ticks of each task, the last one settled for both tasks
    // (nothing of it still in flight when the schedulers stop).
    await new Promise<void>((resolve) => {
      progressed = () => {
        const tick = tickNow();
        const enough = TASKS.every(
          (task) =>
            new Set(runs.filter((r) => r.task === task && settled(task, r.tick)).map((r) => r.tick)).size >=
            3,
        );
        if (enough && TASKS.every((task) => settled(task, tick))) resolve();
      };
    });
    progressed = () => undefined;
    await closeApps(); // stops the schedulers
  });

  it('kept the @Cron metadata in both decorator orders: both jobs were scheduled on each instance', () => {
    expect(scheduled).toEqual([
      ['cron-above', 'cron-below'],
      ['cron-above', 'cron-below'],
    ]);
  });

  it.each(['above', 'below'])(
    '@Locked %s @Cron: every tick ran exactly once across the two instances',
    (task) => {
      const ticks = new Map<number, number>();
      for (const run of runs.filter((r) => r.task === task))
        ticks.set(run.tick, (ticks.get(run.tick) ?? 0) + 1);
      expect(ticks.size).toBeGreaterThanOrEqual(2);
      expect([...ticks.values()].every((count) => count === 1)).toBe(true);
      expect(runs.every((run) => run.locked)).toBe(true);

      // Both instances fired on the ticks: the one that did not run skipped, quietly (debug level).
      const skipped = loggers.flatMap((logger) =>
        logger
          .messages('debug')
          .filter((line) => line.startsWith(`Cron${task === 'above' ? 'Above' : 'Below'}.tick skipped`)),
      );
      expect(skipped.length).toBeGreaterThanOrEqual(ticks.size - 1);
      expect(loggers.flatMap((logger) => logger.messages('warn'))).toEqual([]);
    },
  );
});

@Injectable()
class UnreachableJob {
  runs = 0;
  @Cron('0 0 1 1 *', { name: 'yearly' }) // never fires during the test: called directly, as the scheduler would
  @Locked('job:unreachable')
  async tick() {
    this.runs++;
  }
}

describe('a scheduled tick without a quorum (3 real nodes, 2 paused)', () => {
  const nodes = useRedisNodes(3, {
    afterAll: async () => {
      for (const node of nodes.nodes) if (node.paused) await node.resume();
      await closeApps();
    },
    flushAfterEach: false,
  });

  it('is skipped (no error, no stack, the job does not run): one warning when skipping starts, one when it ends', async () => {
    const logger = new RecordingLogger();
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger, nodeTimeout: 50 })],
      providers: [UnreachableJob],
    });
    await nodes.nodes[1].pause();
    await nodes.nodes[2].pause();
    const job = app.get(UnreachableJob);
    await expect(job.tick()).resolves.toBeUndefined();
    await expect(job.tick()).resolves.toBeUndefined();
    expect(job.runs).toBe(0);
    const warnings = () => logger.messages('warn').filter((line) => line.startsWith('UnreachableJob.tick'));
    // An outage does not warn on every tick: the first skipped tick warns, the next ones are debug lines.
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatch(
      /^UnreachableJob\.tick \(cron '0 0 1 1 \*'\) skipped this tick: Could not lock "job:unreachable".*Check that a majority of the Redis nodes is reachable/,
    );
    expect(logger.messages('debug').filter((line) => /skipped this tick/.test(line))).toHaveLength(1);
    expect(logger.messages('error')).toEqual([]);
    await nodes.nodes[1].resume();
    await nodes.nodes[2].resume();
    await job.tick();
    expect(job.runs).toBe(1);
    expect(warnings()).toHaveLength(2);
    expect(warnings()[1]).toMatch(
      /^UnreachableJob\.tick \(cron '0 0 1 1 \*'\) runs again: .*\(2 ticks skipped meanwhile\)/,
    );
  });
});

@Injectable()
class MonthlyJob {
  @Cron('0 0 1 * *', { name: 'monthly' }) // the next tick is more than 24.8 days away most of the month
  @Locked('job:monthly')
  async bill() {}
}

describe('a monthly tick (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterAll: closeApps, flushAfterEach: false });

  it('keeps its lock after the body (at most the longest ttl), so a late instance skips the tick', async () => {
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, TEST_OPTIONS)],
      providers: [MonthlyJob],
    });
    await app.get(MonthlyJob).bill();
    const admin = nodes.nodes[0].redis();
    const pttl = await admin.pttl('redlock:{job:monthly}');
    await admin.quit();
    expect(pttl).toBeGreaterThan(60_000);
    expect(pttl).toBeLessThanOrEqual(2_147_483_647);
  });
});
