import type { Clock } from '../clock';
import { fanOut, type LockNode, NodeContractError, callNode } from '../nodes';
import type { NodeClockReport, NodeClocks } from '../nodes';
import { describe } from '../messages';

/** One node's health, as {@link probeNodes} saw it. */
export interface NodeHealth {
  readonly node: string;
  /** Answered within the timeout. */
  readonly up: boolean;
  /** Round-trip time of the probe, in ms (when up). */
  readonly latency?: number;
  /** Why it is down. */
  readonly error?: string;
  /** Server uptime in ms (whole seconds), when the node reports it. */
  readonly uptime?: number;
  /**
   * How much longer this node refuses locks, in ms (0 when it takes part): the restart guard's window, or the
   * window after a step of its clock.
   */
  readonly guardRemaining?: number;
  /** The node's clock as this instance sees it: the age of its last sample, the last step seen (§17). */
  readonly clock?: NodeClockReport;
}

/** The result of a health probe: per-node details and whether a quorum of nodes answered. */
export interface HealthReport {
  readonly healthy: boolean;
  readonly quorum: number;
  readonly nodes: NodeHealth[];
}

/**
 * Probes every node in parallel (its uptime via INFO, or any cheap command a custom node offers), each
 * within `timeout` ms. Healthy when a quorum answered and is not held back by the restart guard.
 */
export async function probeNodes(
  nodes: readonly LockNode[],
  quorum: number,
  clock: Clock,
  timeout: number,
  guardWindow: number,
  clocks?: NodeClocks,
): Promise<HealthReport> {
  const started = clock.now();
  const latencies: number[] = new Array(nodes.length).fill(NaN);
  const result = await fanOut(
    nodes,
    async (node, index) => {
      const uptime = node.probe ? await callNode(node, 'probe', () => node.probe!()) : undefined;
      if (uptime !== undefined && !(typeof uptime === 'number' && uptime >= 0 && Number.isFinite(uptime))) {
        throw new NodeContractError(node.name, 'probe', `resolved ${describe(uptime)}, not an uptime in ms`);
      }
      latencies[index] = clock.now() - started;
      return uptime;
    },
    { clock, timeout, needed: nodes.length, isYes: () => true, waitForAll: true },
  );
  const report = result.answers.map((answer, index): NodeHealth => {
    const node = nodes[index].name;
    if (answer.status === 'value') {
      const uptime = answer.value;
      const clock = clocks?.report(node);
      const stepped = clock?.lastStep ? Math.max(0, guardWindow - clock.lastStep.ago) : 0;
      const guardRemaining = Math.max(stepped, uptime === undefined ? 0 : Math.max(0, guardWindow - uptime));
      const latency = Math.round(latencies[index] * 100) / 100;
      return { node, up: true, latency, uptime, guardRemaining, ...(clock ? { clock } : {}) };
    }
    const error = answer.status === 'error' ? answer.error.message : `no answer within ${timeout} ms`;
    return { node, up: false, error };
  });
  const usable = report.filter((node) => node.up && node.guardRemaining === 0).length;
  return { healthy: usable >= quorum, quorum, nodes: report };
}
