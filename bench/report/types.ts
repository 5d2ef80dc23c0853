import type { ScenarioId, ScenarioResult } from '../scenarios';
import type { TargetCheck } from './targets';

export interface BenchMeta {
  readonly startedAt: string;
  readonly durationSec: number;
  /** Wall time of each scenario, in seconds. */
  readonly scenarioSeconds: Partial<Record<ScenarioId, number>>;
  readonly scale: string;
  readonly node: string;
  readonly platform: string;
  readonly cpus: number;
  readonly cpuModel: string;
  readonly redis: string;
  /** 1-minute load average at the start and the end: other work on the machine skews absolute figures. */
  readonly loadAverage: readonly [number, number];
  readonly nodes: number;
  readonly ttl: number;
  readonly rounds: number;
  readonly implementations: readonly { name: string; pkg: string; settings: string }[];
}

/** Everything a run produced; written as bench/results/latest.json. */
export interface BenchResults {
  readonly meta: BenchMeta;
  readonly scenarios: Partial<Record<ScenarioId, ScenarioResult>>;
  readonly targets: readonly TargetCheck[];
}
