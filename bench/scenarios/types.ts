import type { RedisNodes } from '../../test/support';
import type { Implementation } from '../adapters';
import type { ScaleProfile } from '../config';

export type ScenarioId =
  | 'uncontended'
  | 'throughput'
  | 'contention'
  | 'slowNode'
  | 'scale'
  | 'decorator'
  | 'memory'
  | 'heldScale'
  | 'beyondMutex'
  | 'fairness';

/** The rows of the decorator scenario (6): the same locked work behind each face of the library. */
export const DECORATOR_ROWS = {
  core: 'core Redlock.using()',
  service: 'RedlockService.using()',
  locked: '@Locked method',
} as const;

/** One column of a scenario's table. */
export interface Metric {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  /** Which direction is better; `none` for counts that are context, not a score. */
  readonly better: 'lower' | 'higher' | 'none';
  /** False where a ratio to the baseline means nothing (deltas around zero). Default true. */
  readonly ratio?: boolean;
}

/** What a scenario measured: one row per implementation (or variant), one column per metric. */
export interface ScenarioResult {
  readonly id: ScenarioId;
  readonly number: number;
  readonly title: string;
  readonly status: 'ok' | 'skipped';
  /** Why it was skipped. */
  readonly reason?: string;
  /** The row every ratio is taken against (nestjs-redlock, or the core for the decorator scenario). */
  readonly baseline: string;
  readonly metrics: readonly Metric[];
  readonly rows: Record<string, Record<string, number>>;
  readonly notes: readonly string[];
}

export interface BenchContext {
  readonly scale: ScaleProfile;
  /** Every node started for the run (as many as the largest node count of the scale scenario). */
  readonly nodes: RedisNodes;
  /** URLs of the main node set (the first `scale.nodes`). */
  readonly urls: readonly string[];
  readonly impls: readonly Implementation[];
  /** Results of the scenarios that already ran (the slow-node scenario compares with the first). */
  readonly results: Partial<Record<ScenarioId, ScenarioResult>>;
  log(message: string): void;
}

export interface Scenario {
  readonly id: ScenarioId;
  readonly number: number;
  readonly title: string;
  run(context: BenchContext): Promise<ScenarioResult>;
}
