import type { ScenarioId, ScenarioResult } from '../scenarios';

/** One target of issue 6, checked against figures of the same run. */
export interface TargetCheck {
  readonly scenario: number;
  readonly target: string;
  readonly measured: string;
  /** null when the figures needed are missing (scenario skipped, or not in this scale). */
  readonly met: boolean | null;
}

type Results = Partial<Record<ScenarioId, ScenarioResult>>;

const US = 'nestjs-redlock';

function figure(results: Results, id: ScenarioId, row: string, metric: string): number {
  const scenario = results[id];
  if (!scenario || scenario.status !== 'ok') return NaN;
  return scenario.rows[row]?.[metric] ?? NaN;
}

function ratioCheck(
  scenario: number,
  target: string,
  ours: number,
  other: number,
  compare: (ratio: number) => boolean,
  describe: (ratio: number) => string,
): TargetCheck {
  const ratio = ours / other;
  if (!Number.isFinite(ratio)) return { scenario, target, measured: 'n/a', met: null };
  return { scenario, target, measured: describe(ratio), met: compare(ratio) };
}

const times = (ratio: number): string => `${ratio.toFixed(2)}×`;

/** The targets of issue 6 ("ratios measured in the same run"). */
export function checkTargets(results: Results): TargetCheck[] {
  const f = (id: ScenarioId, row: string, metric: string) => figure(results, id, row, metric);
  const checks: TargetCheck[] = [
    ratioCheck(
      1,
      'p50 ≤ 1.05 × the floor',
      f('uncontended', US, 'cycleP50'),
      f('uncontended', 'floor', 'cycleP50'),
      (r) => r <= 1.05,
      (r) => `${times(r)} the floor`,
    ),
    ratioCheck(
      1,
      "p50 ≤ node-redlock's",
      f('uncontended', US, 'cycleP50'),
      f('uncontended', 'node-redlock', 'cycleP50'),
      (r) => r <= 1,
      (r) => `${times(r)} node-redlock`,
    ),
    ratioCheck(
      2,
      'throughput ≥ 2 × node-redlock',
      f('throughput', US, 'opsPerSec'),
      f('throughput', 'node-redlock', 'opsPerSec'),
      (r) => r >= 2,
      (r) => `${times(r)} node-redlock`,
    ),
    ratioCheck(
      2,
      'throughput ≥ 0.85 × the floor with auto-pipelining',
      f('throughput', US, 'opsPerSec'),
      f('throughput', 'floor+autopipelining', 'opsPerSec'),
      (r) => r >= 0.85,
      (r) => `${times(r)} the floor+autopipelining`,
    ),
    ratioCheck(
      3,
      'owner changes/s ≥ 20 × node-redlock (its defaults)',
      f('contention', US, 'ownerChangesPerSec'),
      f('contention', 'node-redlock', 'ownerChangesPerSec'),
      (r) => r >= 20,
      (r) => `${times(r)} node-redlock`,
    ),
    ratioCheck(
      3,
      "wait p99 ≤ 0.2 × node-redlock's",
      f('contention', US, 'waitP99'),
      f('contention', 'node-redlock', 'waitP99'),
      (r) => r <= 0.2,
      (r) => `${times(r)} node-redlock`,
    ),
  ];
  const gaveUp = f('contention', US, 'gaveUp');
  checks.push({
    scenario: 3,
    target: 'no call gives up within a 10 s wait budget',
    measured: Number.isFinite(gaveUp) ? `${gaveUp} gave up (median round)` : 'n/a',
    met: Number.isFinite(gaveUp) ? gaveUp === 0 : null,
  });
  const slow = f('slowNode', US, 'vsUncontended');
  checks.push({
    scenario: 4,
    target: 'acquire p50 with one slow node ≤ 1.2 × scenario 1',
    measured: Number.isFinite(slow) ? times(slow) : 'n/a',
    met: Number.isFinite(slow) ? slow <= 1.2 : null,
  });
  const scale = results.scale;
  const hasNine =
    scale?.metrics.some((m) => m.key === 'p50n9') && scale.metrics.some((m) => m.key === 'p50n1');
  checks.push(
    hasNine
      ? ratioCheck(
          5,
          'p50 with 9 nodes ≤ 1.15 × p50 with 1 node (1 ms each way)',
          f('scale', US, 'p50n9'),
          f('scale', US, 'p50n1'),
          (r) => r <= 1.15,
          times,
        )
      : {
          scenario: 5,
          target: 'p50 with 9 nodes ≤ 1.15 × p50 with 1 node (1 ms each way)',
          measured: 'n/a (not in this scale)',
          met: null,
        },
  );
  const decorator = results.decorator;
  if (!decorator || decorator.status !== 'ok') {
    checks.push({
      scenario: 6,
      target: '@Locked ≤ 1.05 × the core',
      measured: decorator?.reason ?? 'n/a',
      met: null,
    });
  } else {
    const core = decorator.baseline;
    for (const row of Object.keys(decorator.rows).filter((name) => name !== core)) {
      checks.push(
        ratioCheck(
          6,
          `${row} ≤ 1.05 × the core`,
          f('decorator', row, 'cycleP50'),
          f('decorator', core, 'cycleP50'),
          (r) => r <= 1.05,
          (r) => `${times(r)} the core`,
        ),
      );
    }
  }
  const growth = f('memory', US, 'growthMB');
  checks.push({
    scenario: 7,
    target: 'heap growth ≤ 1 MB after 100,000 cycles (distinct keys)',
    measured: Number.isFinite(growth) ? `${growth.toFixed(2)} MB` : 'n/a',
    met: Number.isFinite(growth) ? growth <= 1 : null,
  });
  return checks;
}
