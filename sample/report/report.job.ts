import { Inject, Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { setTimeout as sleep } from 'node:timers/promises';
import { Locked } from '../../lib';
import { ReportRunsRepository } from '../database/report-runs.repository';
import { SAMPLE_CONFIG, SampleConfig } from '../sample.config';

/** How long a run keeps the lock after its tick began, ms: most of the one-second period. */
const HOLD_UNTIL = 600;

/**
 * A report that must run once per second across all instances, not once per instance. Every instance's
 * scheduler fires; the one that gets `report:tick` runs, the others skip quietly.
 */
@Injectable()
export class ReportJob {
  constructor(
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
    private readonly runs: ReportRunsRepository,
  ) {}

  // `wait: 150`: timers on several instances fire in the same millisecond, and their votes can split so
  // that nobody reaches a quorum; one short retry settles it. It is well below HOLD_UNTIL, so the others
  // still find the lock held and skip.
  @Cron(CronExpression.EVERY_SECOND, { name: 'report' })
  @Locked('report:tick', { onBusy: 'skip', wait: 150 })
  async run(): Promise<void> {
    // The second this run is for (a timer may fire a few ms early, or late on a busy machine).
    const tick = Math.floor((Date.now() + 100) / 1_000);
    this.runs.record(tick, this.config.instance);
    // Keep the lock until well into the second: an instance whose timer fires late for this same tick
    // then still finds it held. Releasing at once would let a late timer run the tick a second time.
    const left = tick * 1_000 + HOLD_UNTIL - Date.now();
    if (left > 0) await sleep(left);
  }
}
