import type { LockNode, ReadyState } from './lock-node';
import { portableGuard, sameServer } from '../messages';
import { callNode } from './node-contract';
import type { ResolvedOptions } from '../options';

/**
 * `Redlock.connect()`: connects the nodes, then warns of two entries that reach one server and — once per
 * instance (`noticed` says whether it did already) — of nodes whose restart guard runs in its portable mode.
 * Resolves the states and whether the portable mode has been noticed now.
 */
export async function connectInstance(
  nodes: readonly LockNode[],
  options: ResolvedOptions,
  timeout: number,
  noticed: boolean,
): Promise<{ states: ReadyState[]; noticed: boolean }> {
  const states = await connectNodes(nodes, timeout);
  for (const warning of sameServerWarnings(nodes)) options.logger?.warn(warning);
  const portable = states.filter((state) => state.guardMode === 'data-age').map((state) => state.node);
  if (portable.length === 0 || options.restartGuard === false || noticed) return { states, noticed };
  options.logger?.warn(portableGuard(portable));
  return { states, noticed: true };
}

/**
 * Waits until every node is connected (at most `timeout` ms), starting lazy clients; resolves each node's
 * state and never rejects — unreachable nodes only lower the number of votes available.
 */
export function connectNodes(nodes: readonly LockNode[], timeout: number): Promise<ReadyState[]> {
  return Promise.all(
    nodes.map((node): Promise<ReadyState> | ReadyState => {
      if (!node.connect) return { node: node.name, ready: true };
      return callNode(node, 'connect', () => node.connect!(timeout)).then(
        (): ReadyState => ({ node: node.name, ready: true, guardMode: node.guardMode }),
        (error: unknown) => ({ node: node.name, ready: false, error: error as Error }),
      );
    }),
  );
}

/**
 * Two entries that reach the same server (known by its run_id once connected) give it two votes: the quorum
 * no longer means a majority. One warning per duplicate.
 */
export function sameServerWarnings(nodes: readonly LockNode[]): string[] {
  const seen = new Map<string, number>();
  const warnings: string[] = [];
  nodes.forEach((node, index) => {
    const id = node.serverId;
    if (!id) return;
    const earlier = seen.get(id);
    if (earlier === undefined) seen.set(id, index);
    else warnings.push(sameServer(earlier, nodes[earlier].name, index, node.name));
  });
  return warnings;
}

/**
 * Closes what the nodes opened (`LockNode.close`, each given `timeout` ms to close politely); never rejects —
 * a node that fails to close is left to its client.
 */
export async function closeNodes(nodes: readonly LockNode[], timeout: number): Promise<void> {
  await Promise.all(
    nodes.map(
      (node) => node.close && callNode(node, 'close', () => node.close!(timeout)).catch(() => undefined),
    ),
  );
}
