import { callNode, type NodeGroup } from '../nodes';

/**
 * Takes a writer's intent back on every node that can (docs/DESIGN.md §15), and with fair waiting its ticket
 * (§18): once its acquisition ended, with the lock or without it, it no longer waits, so it must not keep readers
 * out nor later waiters behind it. Owner-checked on the intent id
 * (another writer's intent stays) and announced where readers listen. Best effort: resolves once every node
 * answered or the node timeout passed, never rejects; a node that cannot be asked keeps the intent until it
 * expires (its ttl, a few retry delays).
 */
export function clearIntents(
  group: NodeGroup,
  intentKeys: readonly string[],
  intent: string,
  queueKeys?: readonly string[],
): Promise<void> {
  const asked: Promise<unknown>[] = [];
  for (const node of group.nodes) {
    if (!node.clearIntent) continue;
    // Fair waiting (§18): the ticket is the intent id, taken out of each queue with the intent.
    const clear = queueKeys
      ? () => node.clearIntent!(intentKeys, intent, queueKeys)
      : () => node.clearIntent!(intentKeys, intent);
    asked.push(callNode(node, 'clearIntent', clear).catch(() => undefined));
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
