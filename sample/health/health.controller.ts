import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { RedlockHealthIndicator } from '../../lib';

/** `GET /health`: 200 while a quorum of Redis nodes answers and is past its restart guard, else 503. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly redlock: RedlockHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.redlock.isHealthy('redlock', { timeout: 500 })]);
  }
}
