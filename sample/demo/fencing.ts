import { DemoContext, StepResult } from './context';

/**
 * Step 5: instance a takes a SKU's lock (300 ms ttl, fencing) and pauses in the middle of its purchase;
 * instance b buys the SKU after that lock expired, with a newer token; a wakes and tries its write.
 */
export async function staleWrite(
  ctx: DemoContext,
  sku: string,
): Promise<{ result: StepResult; story: string[] }> {
  const [a, b] = ctx.fleet.instances;
  const story: string[] = [];
  const fail = (reason: string) => ({ result: { ok: false, summary: 'no verdict', reason }, story });

  const paused = await ctx.http.post(`${a.url}/zombie`, { sku });
  if (paused.status !== 202)
    return fail(`POST /zombie answered ${paused.status} ${JSON.stringify(paused.body)}`);
  story.push(
    `${a.name} took sku:${sku} with token ${paused.body.token} (ttl ${paused.body.ttl} ms), read ${paused.body.qty} in stock, and paused`,
  );

  const sale = await ctx.http.post(`${b.url}/orders`, { sku });
  if (sale.status !== 201) return fail(`b's purchase answered ${sale.status} ${JSON.stringify(sale.body)}`);
  story.push(`${b.name} waited for that lock to expire, then bought one with token ${sale.body.token}`);

  const woke = await ctx.http.post(`${a.url}/zombie/${sku}/resume`);
  if (woke.status !== 200) return fail(`resume answered ${woke.status} ${JSON.stringify(woke.body)}`);
  const report = woke.body as {
    token: number;
    pausedMs: number;
    lockExpired: boolean;
    qty: number;
    outcome: string;
    rowToken: number;
  };
  story.push(
    `${a.name} woke after ${report.pausedMs} ms (lock ${report.lockExpired ? 'expired' : 'still valid'}) ` +
      `and wrote qty = ${report.qty} with token ${report.token}: ${report.outcome}`,
  );

  const sold = ctx.stock.soldCount(sku);
  const left = ctx.stock.find(sku)?.qty;
  const problems: string[] = [];
  if (report.outcome !== 'rejected by fencing token') problems.push(`the stale write was ${report.outcome}`);
  if (!(report.token < sale.body.token))
    problems.push(`tokens out of order: ${report.token} then ${sale.body.token}`);
  if (sold !== 1 || left !== 9) problems.push(`expected 1 sale and 9 left, found ${sold} and ${left}`);
  const summary =
    report.outcome === 'rejected by fencing token'
      ? `rejected by its fencing token (${report.token} < ${report.rowToken}); ${sold} sale, ${left} left — ` +
        `without the check it would have written ${report.qty} over ${left}: two sales, one unit off the stock`
      : `the stale write was ${report.outcome}; ${sold} sales, ${left} left`;
  return {
    result: { ok: problems.length === 0, summary, reason: problems.join('; ') || undefined },
    story,
  };
}
