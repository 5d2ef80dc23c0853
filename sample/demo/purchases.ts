import { DemoContext, STOCK, StepResult } from './context';
import { Progress } from './output';

/** How the purchases of one burst were answered. */
export interface Tally {
  /** 201. */
  sold: number;
  /** 410 Gone. */
  soldOut: number;
  /** 409 from the lock's busy filter. */
  busy: number;
  /** 409 from the fencing guard (a holder whose lock had expired). */
  stale: number;
  /** Anything else: other statuses, connection errors (with the first few messages). */
  unexpected: number;
  readonly samples: string[];
}

/**
 * Fires `count` purchases of `sku` at once, spread round-robin over the instances; `onSale` sees the
 * number of sales so far after each 201.
 */
export async function purchaseBurst(
  ctx: DemoContext,
  sku: string,
  count: number,
  onSale?: (sales: number) => void,
): Promise<Tally> {
  const tally: Tally = { sold: 0, soldOut: 0, busy: 0, stale: 0, unexpected: 0, samples: [] };
  const progress = new Progress(count);
  let answered = 0;
  const note = () =>
    `sold ${tally.sold}  sold out ${tally.soldOut}  busy ${tally.busy}` +
    (tally.stale ? `  stale ${tally.stale}` : '') +
    (tally.unexpected ? `  unexpected ${tally.unexpected}` : '');
  const urls = ctx.fleet.urls;
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      try {
        const reply = await ctx.http.post(`${urls[i % urls.length]}/orders`, { sku });
        if (reply.status === 201) {
          tally.sold++;
          onSale?.(tally.sold);
        } else if (reply.status === 410) tally.soldOut++;
        else if (reply.status === 409 && reply.body?.reason === 'stale-token') tally.stale++;
        else if (reply.status === 409) tally.busy++;
        else unexpected(tally, `${reply.status} ${JSON.stringify(reply.body)}`);
      } catch (error) {
        unexpected(tally, error instanceof Error ? error.message : String(error));
      }
      progress.update(++answered, note());
    }),
  );
  progress.end();
  return tally;
}

function unexpected(tally: Tally, sample: string): void {
  tally.unexpected++;
  if (tally.samples.length < 3) tally.samples.push(sample.slice(0, 300));
}

/** Steps 1 and 3: with the lock, exactly the stock is sold, whatever the contention. */
export function exactlyStock(ctx: DemoContext, sku: string, tally: Tally): StepResult {
  const sold = ctx.stock.soldCount(sku);
  const left = ctx.stock.find(sku)?.qty;
  const rejected = tally.soldOut + tally.busy + tally.stale + tally.unexpected;
  const summary =
    `${sold} sold, ${rejected} rejected (${tally.soldOut} sold out, ${tally.busy} busy` +
    (tally.unexpected ? `, ${tally.unexpected} unexpected` : '') +
    `), ${Math.max(0, sold - STOCK)} oversold, ${left} left; ` +
    (tally.stale === 0
      ? 'no stale token to refuse: the lock alone kept the buyers apart'
      : `the fencing token refused ${tally.stale} holders whose lock had expired`);
  const problems: string[] = [];
  if (sold !== STOCK) problems.push(`expected exactly ${STOCK} sales in the database, found ${sold}`);
  if (left !== STOCK - sold) problems.push(`the stock says ${left} left after ${sold} sales of ${STOCK}`);
  if (tally.sold !== sold)
    problems.push(`${tally.sold} purchases answered 201 but ${sold} sales were recorded`);
  if (tally.unexpected > 0) problems.push(`unexpected answers, e.g. ${tally.samples.join(' | ')}`);
  return { ok: problems.length === 0, summary, reason: problems.join('; ') || undefined };
}

/** Step 2: without the lock, the same burst sells more than the stock (the demo's negative control). */
export function oversold(ctx: DemoContext, sku: string, tally: Tally): StepResult {
  const sold = ctx.stock.soldCount(sku);
  const left = ctx.stock.find(sku)?.qty;
  const summary =
    `${sold} sold of ${STOCK} in stock: ${Math.max(0, sold - STOCK)} oversold; ` +
    `the stock says ${left} left (lost updates)`;
  if (sold > STOCK) return { ok: true, summary };
  return {
    ok: false,
    summary,
    reason:
      `the race did not show: ${sold} sold without the lock` +
      (tally.unexpected ? ` (unexpected answers, e.g. ${tally.samples.join(' | ')})` : '') +
      '; raise WORK_MS to widen the window between reading and writing the stock',
  };
}
