import { Injectable } from '@nestjs/common';
import type { NodeHealth } from './core';
import { RedlockService } from './redlock.service';

/** What {@link RedlockHealthIndicator.isHealthy} returns, in the shape `@nestjs/terminus` 11 expects. */
export type RedlockHealthResult<Key extends string = string> = Record<
  Key,
  {
    status: 'up' | 'down';
    quorum: number;
    nodes: NodeHealth[];
    /** Locks this instance holds now, and callers waiting in an acquisition (`stats.held`, `stats.waiting`). */
    held: number;
    waiting: number;
  }
>;

/**
 * A health indicator for `@nestjs/terminus`: up when a quorum of nodes answers within the timeout and is
 * past its restart-guard window; per-node details (latency, error, uptime, guard window left), and how many
 * locks this instance holds and how many callers wait. Needs no
 * import of terminus (an optional peer): terminus 11 reads the returned `status`.
 *
 * ```ts
 * @Get('health') @HealthCheck()
 * check() { return this.health.check([() => this.redlockHealth.isHealthy('redlock')]); }
 * ```
 */
@Injectable()
export class RedlockHealthIndicator {
  constructor(private readonly redlock: RedlockService) {}

  /** @param key the name in the health report; @param timeout per-node probe timeout in ms (default 1000). */
  async isHealthy<Key extends string = 'redlock'>(
    key: Key = 'redlock' as Key,
    { timeout = 1_000 }: { timeout?: number } = {},
  ): Promise<RedlockHealthResult<Key>> {
    const report = await this.redlock.probe(timeout);
    const details = {
      status: report.healthy ? ('up' as const) : ('down' as const),
      quorum: report.quorum,
      nodes: report.nodes,
      held: this.redlock.stats.held,
      waiting: this.redlock.stats.waiting,
    };
    return { [key]: details } as RedlockHealthResult<Key>;
  }
}
