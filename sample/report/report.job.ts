import { Inject, Injectable } from '@nestjs/common';
import { Cron, CronExpression } from '@nestjs/schedule';
import { Locked } from '../../lib';
import { ReportRunsRepository } from '../database/report-runs.repository';
import { SAMPLE_CONFIG, SampleConfig } from '../sample.config';

/**
 * A report that must run once per second across all instances, not once per instance. Every instance's
 * scheduler fires; the one that gets `report:tick` runs, the others skip quietly. `@Locked` keeps the lock
 * until shortly before the next tick, so an instance whose timer fires late for the same tick skips too.
 */
@Injectable()
export class ReportJob {
  constructor(
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
    private readonly runs: ReportRunsRepository,
  ) {}

  @Cron(CronExpression.EVERY_SECOND, { name: 'report' })
  @Locked('report:tick')
  async run(): Promise<void> {
    // The second this run is for (a timer may fire a few ms early, or late on a busy machine).
    const tick = Math.floor((Date.now() + 100) / 1_000);
    this.runs.record(tick, this.config.instance);
  }
}
