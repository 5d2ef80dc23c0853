import { Injectable } from '@nestjs/common';
import type { Statement } from 'better-sqlite3';
import { SampleDatabase } from './sample-database';

export interface StockRow {
  readonly sku: string;
  readonly qty: number;
  /** The newest fencing token that has claimed the row. */
  readonly lastToken: number;
}

/** What a claim found: the quantity, or why the token was refused. */
export type Claim =
  | { readonly outcome: 'claimed'; readonly qty: number }
  | { readonly outcome: 'stale'; readonly rowToken: number }
  | { readonly outcome: 'unknown-sku' };

/** What a fenced write did. */
export type FencedWrite =
  { readonly outcome: 'sold' } | { readonly outcome: 'stale'; readonly rowToken: number };

/**
 * The `stock` and `sales` tables. Every sale is written in one transaction with its `sales` row.
 *
 * Fencing a read-modify-write takes two statements. The holder first *claims* the row with its token —
 * the guard `WHERE last_token < :token`, refused when a newer holder got there first — and reads the
 * quantity; it later writes only while the row still carries its token. A holder that lost its lock
 * without knowing (a pause past its ttl) is refused both at its write landing after a newer holder's
 * sale and at one landing between that holder's read and its write, which a guard on the write alone
 * would let through as a lost update.
 */
@Injectable()
export class StockRepository {
  private readonly statements: Record<
    | 'find'
    | 'seed'
    | 'restock'
    | 'forgetSales'
    | 'claim'
    | 'fencedWrite'
    | 'unfencedWrite'
    | 'recordSale'
    | 'countSales',
    Statement
  >;

  constructor(private readonly database: SampleDatabase) {
    const db = database.connection;
    this.statements = {
      find: db.prepare('SELECT sku, qty, last_token AS lastToken FROM stock WHERE sku = ?'),
      seed: db.prepare('INSERT OR IGNORE INTO stock (sku, qty) VALUES (?, ?)'),
      restock: db.prepare(
        `INSERT INTO stock (sku, qty, last_token) VALUES (:sku, :qty, 0)
         ON CONFLICT (sku) DO UPDATE SET qty = :qty, last_token = 0`,
      ),
      forgetSales: db.prepare('DELETE FROM sales WHERE sku = ?'),
      claim: db.prepare(
        `UPDATE stock SET last_token = :token
          WHERE sku = :sku AND last_token < :token
          RETURNING qty`,
      ),
      fencedWrite: db.prepare('UPDATE stock SET qty = :qty WHERE sku = :sku AND last_token = :token'),
      // Without a lock there is no token: the write unlocked code does. Two buyers who read the same
      // quantity both sell, and the stock goes down by one (a lost update).
      unfencedWrite: db.prepare('UPDATE stock SET qty = :qty WHERE sku = :sku'),
      recordSale: db.prepare(
        'INSERT INTO sales (sku, instance, token, at) VALUES (:sku, :instance, :token, :at)',
      ),
      countSales: db.prepare('SELECT count(*) AS sold FROM sales WHERE sku = ?'),
    };
  }

  find(sku: string): StockRow | undefined {
    return this.statements.find.get(sku) as StockRow | undefined;
  }

  /** Creates the stock row of `sku` with `qty` units unless it exists. */
  seed(sku: string, qty: number): void {
    this.statements.seed.run(sku, qty);
  }

  /** Puts `qty` units of `sku` in stock, with no sales and no token seen yet (fresh stock). */
  restock(sku: string, qty: number): void {
    this.database.connection.transaction(() => {
      this.statements.restock.run({ sku, qty });
      this.statements.forgetSales.run(sku);
    })();
  }

  /** Claims the row for `token` and reads its quantity; refused when a newer token claimed it. */
  claim(sku: string, token: number): Claim {
    return this.database.connection
      .transaction((): Claim => {
        const row = this.statements.claim.get({ sku, token }) as { qty: number } | undefined;
        if (row) return { outcome: 'claimed', qty: row.qty };
        const current = this.find(sku);
        return current ? { outcome: 'stale', rowToken: current.lastToken } : { outcome: 'unknown-sku' };
      })
      .immediate();
  }

  /** Writes `qty` and records the sale, only while `token` is still the newest claim on the row. */
  sellFenced(sku: string, qty: number, token: number, instance: string): FencedWrite {
    return this.database.connection
      .transaction((): FencedWrite => {
        if (this.statements.fencedWrite.run({ sku, qty, token }).changes === 1) {
          this.statements.recordSale.run({ sku, instance, token, at: Date.now() });
          return { outcome: 'sold' };
        }
        return { outcome: 'stale', rowToken: this.find(sku)?.lastToken ?? 0 };
      })
      .immediate();
  }

  /** Writes `qty` and records the sale with no token to check (the lock is disabled). */
  sellUnfenced(sku: string, qty: number, instance: string): void {
    this.database.connection
      .transaction(() => {
        this.statements.unfencedWrite.run({ sku, qty });
        this.statements.recordSale.run({ sku, instance, token: null, at: Date.now() });
      })
      .immediate();
  }

  /** How many sales of `sku` were recorded. */
  soldCount(sku: string): number {
    return (this.statements.countSales.get(sku) as { sold: number }).sold;
  }
}
