import { Body, Controller, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { parseSku } from '../orders/orders.errors';
import { PausedHolder, ZombieReport, ZombieService } from './zombie.service';

/**
 * The stale-write experiment, in two calls (the pause in between is yours):
 * `POST /zombie { "sku": "widget" }` → 202, a holder has the lock and is paused;
 * buy the SKU elsewhere (it waits for the paused holder's lock to expire);
 * `POST /zombie/widget/resume` → what the paused holder's late write did.
 */
@Controller('zombie')
export class ZombieController {
  constructor(private readonly zombies: ZombieService) {}

  @Post()
  @HttpCode(HttpStatus.ACCEPTED)
  pause(@Body() body: { sku?: unknown } | undefined): Promise<PausedHolder> {
    return this.zombies.pause(parseSku(body?.sku));
  }

  @Post(':sku/resume')
  @HttpCode(HttpStatus.OK)
  resume(@Param('sku') sku: string): Promise<ZombieReport> {
    return this.zombies.resume(parseSku(sku));
  }
}
