import { callNode, type NodeGroup } from '../nodes';

/**
 * Takes a writer's intent back on every node that can (docs/DESIGN.md §15): once its acquisition ended, with
 * the lock or without it, it no longer waits, so it must not keep readers out. Owner-checked on the intent id
 * (another writer's intent stays) and announced where readers listen. Best effort: resolves once every node
 * answered or the node timeout passed, never rejects; a node that cannot be asked keeps the intent until it
 * expires (its ttl, a few retry delays).
 */
export function clearIntents(group: NodeGroup, intentKeys: readonly string[], intent: string): Promise<void> {
  const asked: Promise<unknown>[] = [];
  for (const node of group.nodes) {
    if (!node.clearIntent) continue;
    asked.push(
      callNode(node, 'clearIntent', () => node.clearIntent!(intentKeys, intent)).catch(() => undefined),
    );
  }
  if (asked.length === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = group.clock.setTimeout(resolve, group.nodeTimeout);
    void Promise.all(asked).then(() => {
      timer.cancel();
      resolve();
    });
  });
}
