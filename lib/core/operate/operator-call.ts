import { withTimeout } from '../clock';
import { type NodeGroup, type LockNode, callNode } from '../nodes';

/**
 * One call of an operator's operation (inspecting, revoking) on `node`, bounded: operations off the lock's clock
 * get a little more room than a lock operation — 4 × the node timeout, at least 200 ms — and reject naming the
 * node and what it did not answer in time.
 */
export function operatorCall<T>(
  group: NodeGroup,
  node: LockNode,
  method: string,
  call: () => Promise<T>,
  what: string,
): Promise<T> {
  return withTimeout(
    callNode(node, method, call),
    Math.max(group.nodeTimeout * 4, 200),
    () => new Error(`${node.name} did not answer the ${what} in time`),
  );
}
