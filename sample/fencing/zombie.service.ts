import { ConflictException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { Lock, RedlockService } from '../../lib';
import { StockRepository } from '../database/stock.repository';
import { unknownSku } from '../orders/orders.errors';
import { SAMPLE_CONFIG, SampleConfig } from '../sample.config';

/** The paused holder's lock ttl, ms: short, so the demo does not wait long for it to expire. */
export const ZOMBIE_TTL = 300;

export interface PausedHolder {
  readonly sku: string;
  readonly token: number;
  readonly ttl: number;
  /** The quantity it read before its pause (its write is based on it). */
  readonly qty: number;
}

export interface ZombieReport {
  readonly sku: string;
  readonly token: number;
  /** How long the holder was paused, ms. */
  readonly pausedMs: number;
  /** Whether its lock had expired when it woke (it does not look — a paused process cannot). */
  readonly lockExpired: boolean;
  /** The quantity it tried to write (what it read, minus one). */
  readonly qty: number;
  readonly outcome: 'written' | 'rejected by fencing token';
  /** The token of the newest claim on the stock row. */
  readonly rowToken: number;
}

interface Sleeper {
  readonly wake: () => void;
  readonly report: Promise<ZombieReport>;
}

/**
 * A purchase that stops in the middle of its locked section, the way a process does during a long GC
 * pause or under SIGSTOP: it runs no code, so it neither renews its lock nor notices it expire. Meanwhile
 * another buyer takes the lock, with a newer token, and sells. When the sleeper wakes it carries on where
 * it stopped — the write — and only the fencing token stands in its way.
 */
@Injectable()
export class ZombieService {
  private readonly sleepers = new Map<string, Sleeper>();

  constructor(
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
    private readonly redlock: RedlockService,
    private readonly stock: StockRepository,
  ) {}

  /** Takes the SKU's lock (fencing, short ttl, never renewed), reads the stock under it, and pauses. */
  async pause(sku: string): Promise<PausedHolder> {
    if (this.sleepers.has(sku)) throw new ConflictException(`A holder of "sku:${sku}" is already paused.`);
    const lock = await this.redlock.acquire(`sku:${sku}`, { ttl: ZOMBIE_TTL, fencing: true });
    const token = lock.fencingToken!;
    const claim = this.stock.claim(sku, token);
    if (claim.outcome !== 'claimed') {
      await this.redlock.release(lock);
      throw claim.outcome === 'unknown-sku'
        ? unknownSku(sku)
        : new ConflictException(`A newer token already claimed "${sku}".`);
    }
    let wake!: () => void;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    this.sleepers.set(sku, { wake, report: this.afterPause(sku, lock, claim.qty, woken) });
    return { sku, token, ttl: lock.ttl, qty: claim.qty };
  }

  /** Wakes the paused holder of `sku`; resolves what its write did. */
  resume(sku: string): Promise<ZombieReport> {
    const sleeper = this.sleepers.get(sku);
    if (!sleeper) throw new NotFoundException(`No paused holder of "sku:${sku}".`);
    this.sleepers.delete(sku);
    sleeper.wake();
    return sleeper.report;
  }

  private async afterPause(
    sku: string,
    lock: Lock,
    qty: number,
    woken: Promise<void>,
  ): Promise<ZombieReport> {
    const pausedAt = Date.now();
    await woken;
    const pausedMs = Date.now() - pausedAt;
    const lockExpired = lock.isExpired;
    const token = lock.fencingToken!;
    // Carries on with the write it was about to do, with what it read and its token.
    const write = this.stock.sellFenced(sku, qty - 1, token, `${this.config.instance} (paused holder)`);
    await this.redlock.release(lock); // expired long ago: nothing is left to delete, and no error
    const rowToken = write.outcome === 'stale' ? write.rowToken : token;
    const outcome = write.outcome === 'sold' ? 'written' : 'rejected by fencing token';
    return { sku, token, pausedMs, lockExpired, qty: qty - 1, outcome, rowToken };
  }
}
