import { Injectable } from '@nestjs/common';
import { Cron } from '@nestjs/schedule';
import { Locked, RedlockModule } from '../../lib';
import { useRedisNodes } from '../support';
import { RecordingLogger, TEST_OPTIONS, closeApps, createApp } from '../nest/helpers';

let ran = 0;

@Injectable()
class Jobs {
  // A cron that never fires during the test: its calls below are treated as ticks.
  @Cron('0 0 1 1 *')
  @Locked('split-tick')
  async nightly() {
    ran++;
  }
}

/**
 * A tick given up on a split vote (issue "nothing left behind" §3): when no instance holds its lock afterwards,
 * nobody may have run it, and that is said at warn level; when another instance holds it, a debug line only.
 * The split is made on real nodes by other owners' keys on two of three nodes.
 */
describe('a scheduled tick lost to a split vote (3 real nodes)', () => {
  const nodes = useRedisNodes(3, { afterEach: closeApps });

  async function tickWithKeysOn(owners: [string, string]) {
    await Promise.all(
      owners.map(async (owner, i) => {
        const admin = nodes.nodes[i + 1].redis();
        await admin.set('redlock:{split-tick}', owner, 'PX', 60_000);
        admin.disconnect();
      }),
    );
    const logger = new RecordingLogger();
    const app = await createApp({
      imports: [RedlockModule.forRoot(nodes.urls, { ...TEST_OPTIONS, logger })],
      providers: [Jobs],
    });
    ran = 0;
    await app.get(Jobs).nightly();
    return logger;
  }

  it('warns that the tick may not have run anywhere when no holder has a majority', async () => {
    const logger = await tickWithKeysOn(['other-a', 'other-b']);
    expect(ran).toBe(0);
    const warnings = logger.messages('warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^Jobs\.nightly \(cron '0 0 1 1 \*'\) did not run this tick here: the instances' votes stayed split \(\d+ attempts\), and no instance held 'split-tick' on a majority/,
    );
  });

  it('control: one holder on a majority runs the tick elsewhere, which is a debug line only', async () => {
    const logger = await tickWithKeysOn(['other-a', 'other-a']);
    expect(ran).toBe(0);
    expect(logger.messages('warn')).toEqual([]);
    expect(logger.messages('debug').some((line) => line.includes('Jobs.nightly'))).toBe(true);
  });
});
