import { beyondMutex } from './beyond-mutex';
import { contention } from './contention';
import { decorator } from './decorator';
import { fairness } from './fairness';
import { heldScale } from './held-scale';
import { memory } from './memory';
import { scale } from './scale';
import { slowNode } from './slow-node';
import { throughput } from './throughput';
import type { Scenario } from './types';
import { uncontended } from './uncontended';

export type { BenchContext, Metric, Scenario, ScenarioId, ScenarioResult } from './types';

/** In scenario order; the slow-node scenario reads the uncontended one's results, so it comes after it. */
export const SCENARIOS: readonly Scenario[] = [
  uncontended,
  throughput,
  contention,
  slowNode,
  scale,
  decorator,
  memory,
  heldScale,
  beyondMutex,
  fairness,
];
