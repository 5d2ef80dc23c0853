import type { ExportRunsRepository } from '../database/export-runs.repository';
import { EXPORT_PERMITS } from '../exports/exports.controller';
import { DemoContext, StepResult } from './context';
import { Progress } from './output';

/** The most exports running at the same moment, from their recorded start and end times. */
export function mostAtOnce(runs: readonly { started: number; ended: number | null }[]): number {
  const edges = runs.flatMap((run) => [
    { at: run.started, delta: 1 },
    { at: run.ended ?? Infinity, delta: -1 },
  ]);
  // An export that ended at the instant another started did not overlap it: ends first.
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let most = 0;
  for (const edge of edges) {
    running += edge.delta;
    most = Math.max(most, running);
  }
  return most;
}

/**
 * Step 6: `requests` exports asked for at once, spread over the instances; `@Locked('exports', { permits: 2 })`
 * must let exactly two run at any moment across all of them, and every request must get its export.
 */
export async function exportsAtOnce(
  ctx: DemoContext & { readonly exports: ExportRunsRepository },
  requests: number,
): Promise<StepResult> {
  const from = performance.timeOrigin + performance.now();
  const progress = new Progress(requests);
  const urls = ctx.fleet.urls;
  let done = 0;
  const statuses = await Promise.all(
    Array.from({ length: requests }, async (_, i) => {
      const reply = await ctx.http.post(`${urls[i % urls.length]}/exports`).catch(() => undefined);
      progress.update(++done, `${done} answered`);
      return reply?.status ?? 0;
    }),
  );
  progress.end();
  const runs = ctx.exports.runsSince(from);
  const most = mostAtOnce(runs);
  const failed = statuses.filter((status) => status !== 201).length;
  const instances = new Set(runs.map((run) => run.instance)).size;
  const summary =
    `${requests} exports on ${urls.length} instances: ${runs.length} ran, at most ${most} at once ` +
    `(limit ${EXPORT_PERMITS}), on ${instances} instance(s), ${failed} refused`;
  const problems: string[] = [];
  if (most > EXPORT_PERMITS)
    problems.push(`${most} exports ran at once, above the limit of ${EXPORT_PERMITS}`);
  if (most < EXPORT_PERMITS) problems.push(`never ${EXPORT_PERMITS} at once: the permits were not used`);
  if (failed > 0 || runs.length !== requests) problems.push(`${failed} requests did not get their export`);
  return { ok: problems.length === 0, summary, reason: problems.join('; ') || undefined };
}
