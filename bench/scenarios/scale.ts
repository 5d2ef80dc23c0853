import { withImplementations } from '../rounds';
import type { BenchContext, Metric, Scenario, ScenarioResult } from './types';
import { CYCLE_BLOCK, sequentialRounds } from './uncontended';

const TITLE = 'Scale: acquire + release p50 by number of nodes';

/** Scenario 5: the cost of more nodes. Fan-out is parallel, so p50 should hardly grow with N. */
export const scale: Scenario = {
  id: 'scale',
  number: 5,
  title: TITLE,
  async run({ scale: profile, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { nodeCounts, warmup, iterations } = profile.scale;
    const rows: Record<string, Record<string, number>> = {};
    for (const impl of impls) rows[impl.name] = {};
    for (const count of nodeCounts) {
      const urls = nodes.urls.slice(0, count);
      const byImpl = await withImplementations(
        impls,
        { urls, waitBudgetMs: profile.contention.waitBudgetMs, ttl: profile.ttl },
        (locks) =>
          sequentialRounds(
            locks,
            profile.rounds,
            (lock) => `s5:${lock.name}:${count}`,
            profile.ttl,
            warmup,
            iterations,
            (round) => log(`  5 scale · ${count} node(s) · round ${round + 1}`),
          ),
      );
      for (const [name, figures] of Object.entries(byImpl)) {
        rows[name][`p50n${count}`] = figures.cycleP50;
      }
    }
    const first = nodeCounts[0];
    const last = nodeCounts[nodeCounts.length - 1];
    for (const row of Object.values(rows)) row.growth = row[`p50n${last}`] / row[`p50n${first}`];
    const metrics: Metric[] = [
      ...nodeCounts.map((count): Metric => ({
        key: `p50n${count}`,
        label: `p50, ${count} node${count === 1 ? '' : 's'}`,
        unit: 'ms',
        better: 'lower',
      })),
      { key: 'growth', label: `p50 ${last} / p50 ${first}`, unit: '×', better: 'lower' },
    ];
    return {
      id: 'scale',
      number: 5,
      title: TITLE,
      status: 'ok',
      baseline: 'nestjs-redlock',
      metrics,
      rows,
      notes: [
        `Node counts ${nodeCounts.join(', ')}; ${iterations} sequential cycles per round after ${warmup} ` +
          `warm-up cycles; implementations take turns every ${CYCLE_BLOCK} cycles; median of ` +
          `${profile.rounds} rounds per node count.`,
      ],
    };
  },
};
