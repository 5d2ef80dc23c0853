import { Controller, Inject, Post } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Locked, RedlockService } from '../../lib';
import { ExportRunsRepository } from '../database/export-runs.repository';
import { SAMPLE_CONFIG, SampleConfig } from '../sample.config';

/** How many exports may run at once across every instance (a heavy job: at most two). */
export const EXPORT_PERMITS = 2;
/** How long one export takes. */
const EXPORT_MS = 150;

@Controller('exports')
export class ExportsController {
  constructor(
    private readonly redlock: RedlockService,
    private readonly runs: ExportRunsRepository,
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
  ) {}

  /**
   * `POST /exports` → 201 `{ instance, permit }` once the export ran. At most two run at once across all
   * instances (a counting semaphore); the others wait for a permit, up to 15 s, then get 409.
   */
  @Post()
  @Locked('exports', { permits: EXPORT_PERMITS, wait: 15_000 })
  async start(): Promise<{ instance: string; permit: number }> {
    const permit = this.redlock.current()!.permit!;
    const id = this.runs.start(this.config.instance, permit);
    await sleep(EXPORT_MS);
    this.runs.end(id);
    return { instance: this.config.instance, permit };
  }
}
