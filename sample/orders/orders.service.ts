import { Inject, Injectable } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { Locked, RedlockService } from '../../lib';
import { StockRepository } from '../database/stock.repository';
import { SAMPLE_CONFIG, SampleConfig } from '../sample.config';
import { SoldOutException, StaleTokenException, unknownSku } from './orders.errors';

/**
 * How long a buyer waits for the lock, ms, then 409. The library queues the buyers of one SKU inside each
 * instance, so only one per instance contends for the distributed lock at a time.
 */
const WAIT = 5_000;

export interface Sale {
  readonly sku: string;
  readonly instance: string;
  /** The fencing token the sale was written with (absent when the lock is disabled). */
  readonly token?: number;
  /** Units left after this sale. */
  readonly remaining: number;
}

/**
 * Buying one unit is a check-then-act: read the stock, take the payment, write the stock. Two buyers
 * interleaving those steps both sell the same unit — unless the SKU's lock makes the section exclusive
 * across every instance. Its fencing token goes to the database with the read and the write, so a holder
 * that lost its lock without noticing (a long pause) cannot write over the next holder (see `fencing/`).
 */
@Injectable()
export class OrdersService {
  constructor(
    @Inject(SAMPLE_CONFIG) private readonly config: SampleConfig,
    private readonly stock: StockRepository,
    private readonly redlock: RedlockService,
  ) {}

  /** One unit of `sku`: 409 when the SKU stays busy with other buyers, 410 when sold out. */
  async purchase(sku: string): Promise<Sale> {
    if (this.config.lockDisabled) return this.sell(sku, undefined);
    // Sold out is final (only a restock adds units): a buyer who comes after the last unit went needs no
    // lock to be told so.
    if (this.stock.find(sku)?.qty === 0) throw new SoldOutException(sku);
    return this.purchaseLocked(sku);
  }

  // `wait`: how long a buyer waits for the lock, then 409 (the module's LockBusyFilter).
  // `onLockLost: 'warn'`: the write is fenced, so a sale that committed was valid even if the lock was
  // lost afterwards; the buyer gets the sale, not an error for a sale that happened.
  @Locked('sku:<0>', { fencing: true, wait: WAIT, onLockLost: 'warn' })
  private async purchaseLocked(sku: string): Promise<Sale> {
    return this.sell(sku, this.redlock.current()!.fencingToken);
  }

  /** Read, work, write: the same steps with the lock's token or (lock disabled) without one. */
  private async sell(sku: string, token: number | undefined): Promise<Sale> {
    const qty = token === undefined ? this.stock.find(sku)?.qty : this.claim(sku, token);
    if (qty === undefined) throw unknownSku(sku);
    if (qty <= 0) throw new SoldOutException(sku);

    await sleep(this.config.workMs); // the payment provider, a warehouse API, ...

    const { instance } = this.config;
    if (token === undefined) {
      this.stock.sellUnfenced(sku, qty - 1, instance);
    } else {
      const write = this.stock.sellFenced(sku, qty - 1, token, instance);
      if (write.outcome === 'stale') throw new StaleTokenException(sku, token, write.rowToken);
    }
    return { sku, instance, token, remaining: qty - 1 };
  }

  /** The quantity, read under the claim of `token` (undefined: no such SKU). */
  private claim(sku: string, token: number): number | undefined {
    const claim = this.stock.claim(sku, token);
    if (claim.outcome === 'stale') throw new StaleTokenException(sku, token, claim.rowToken);
    return claim.outcome === 'claimed' ? claim.qty : undefined;
  }
}
