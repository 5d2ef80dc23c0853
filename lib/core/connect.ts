import type { LockNode, ReadyState } from './lock-node';
import { sameServer } from './messages';
import { callNode } from './node-contract';

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
