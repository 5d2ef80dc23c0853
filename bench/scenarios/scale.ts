import { startLatencyProxies } from '../latency-proxies';
import { withImplementations } from '../rounds';
import type { BenchContext, Metric, Scenario, ScenarioResult } from './types';
import { CYCLE_BLOCK, sequentialRounds } from './uncontended';

const TITLE = 'Fan-out: acquire + release p50 by number of nodes, each behind a fixed latency';

/**
 * Scenario 5: the cost of more nodes. Every node sits behind a TCP proxy adding a fixed latency each way (in a
 * child process), so a cycle costs network round trips rather than the shared CPU of nodes on a 2-core
 * machine: a parallel fan-out keeps p50 nearly flat as N grows.
 */
export const scale: Scenario = {
  id: 'scale',
  number: 5,
  title: TITLE,
  async run({ scale: profile, nodes, impls, log }: BenchContext): Promise<ScenarioResult> {
    const { nodeCounts, warmup, iterations, latencyMs } = profile.scale;
    const rows: Record<string, Record<string, number>> = {};
    for (const impl of impls) rows[impl.name] = {};
    const most = Math.max(...nodeCounts);
    const proxies = await startLatencyProxies(nodes.nodes.slice(0, most), latencyMs);
    try {
      for (const count of nodeCounts) {
        const urls = proxies.urls.slice(0, count);
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
          rows[name][`cpun${count}`] = figures.cpuPerCycle;
        }
      }
    } finally {
      await proxies.stop();
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
      ...nodeCounts.map((count): Metric => ({
        key: `cpun${count}`,
        label: `client CPU per cycle, ${count} node${count === 1 ? '' : 's'}`,
        unit: 'µs',
        better: 'lower',
      })),
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
        `Every node behind a TCP proxy (test/support/tcp-proxy.ts, in a child process) adding ${latencyMs} ms ` +
          'each way (timer-based: about 1–2 ms more per direction in practice); the same proxies for every ' +
          'implementation. ' +
          `Node counts ${nodeCounts.join(', ')}; ${iterations} sequential cycles per round after ${warmup} ` +
          `warm-up cycles; implementations take turns every ${CYCLE_BLOCK} cycles; median of ` +
          `${profile.rounds} rounds per node count.`,
      ],
    };
  },
};
