import { callNode, type NodeGroup } from '../nodes';

/**
 * Takes a writer's intent back on every node that can (docs/DESIGN.md §15): once its acquisition ended, with
 * the lock or without it, it no longer waits, so it must not keep readers out. Owner-checked on the intent id
 * (another writer's intent stays) and announced where readers listen. Best effort, not awaited by the caller:
 * a node that cannot be asked keeps the intent until it expires (its ttl, a few retry delays).
 */
export function clearIntents(group: NodeGroup, intentKeys: readonly string[], intent: string): void {
  for (const node of group.nodes) {
    if (!node.clearIntent) continue;
    callNode(node, 'clearIntent', () => node.clearIntent!(intentKeys, intent)).catch(() => undefined);
  }
}
