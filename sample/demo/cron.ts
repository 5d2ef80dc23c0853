import { setTimeout as sleep } from 'node:timers/promises';
import { DemoContext, StepResult } from './context';
import { Progress } from './output';

/**
 * Step 4: every instance's scheduler fires the report job each second; over `ticks` whole seconds, the
 * database must show exactly one run for each of them.
 */
export async function cronTicks(ctx: DemoContext, ticks: number): Promise<StepResult> {
  const from = Math.floor(Date.now() / 1_000) + 1;
  const to = from + ticks - 1;
  // The run for a tick records itself as it starts; a second after the last tick began is plenty.
  const until = (to + 1) * 1_000 + 200;
  const progress = new Progress(ticks);
  while (Date.now() < until) {
    const done = Math.max(0, Math.min(ticks, Math.floor(Date.now() / 1_000) - from));
    progress.update(done, `${ctx.runs.runsBetween(from, to).length} runs so far`);
    await sleep(Math.min(100, Math.max(0, until - Date.now())));
  }
  progress.end();

  const runs = ctx.runs.runsBetween(from, to);
  const byTick = new Map<number, string[]>();
  for (let tick = from; tick <= to; tick++) byTick.set(tick, []);
  for (const run of runs) byTick.get(run.tick)!.push(run.instance);
  const doubled = [...byTick].filter(([, who]) => who.length > 1);
  const missing = [...byTick].filter(([, who]) => who.length === 0).map(([tick]) => tick);
  const perInstance = new Map<string, number>();
  for (const run of runs) perInstance.set(run.instance, (perInstance.get(run.instance) ?? 0) + 1);
  const spread = [...perInstance]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([instance, n]) => `${instance} ×${n}`)
    .join(', ');
  const summary = `${ticks} ticks, ${runs.length} runs, ${doubled.length} ticks run twice (${spread || 'no runs'})`;

  const problems: string[] = [];
  if (doubled.length > 0) {
    problems.push(
      'ran more than once: ' +
        doubled.map(([tick, who]) => `tick ${tick} on ${who.join(' and ')}`).join(', '),
    );
  }
  if (missing.length > 0) problems.push(`no run for tick(s) ${missing.join(', ')}`);
  return { ok: problems.length === 0, summary, reason: problems.join('; ') || undefined };
}
