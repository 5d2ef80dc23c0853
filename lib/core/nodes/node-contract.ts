import type { AcquireReply, LockNode } from './lock-node';
import { describe } from '../messages';

/**
 * A {@link LockNode} broke its contract: a method threw instead of rejecting, returned something that is not
 * a Promise, or resolved a value of the wrong shape. Counted as that node's error, like a failed command.
 */
export class NodeContractError extends Error {
  constructor(node: string, method: string, problem: string) {
    super(
      `${node}: LockNode.${method}() ${problem} (a LockNode must return a Promise of the documented reply)`,
    );
    this.name = 'NodeContractError';
  }
}

/**
 * Calls one method of a node and always returns a real Promise: a synchronous throw becomes a rejection, and
 * a return value that is not a thenable a {@link NodeContractError}.
 */
export function callNode<T>(node: LockNode, method: string, call: () => Promise<T>): Promise<T> {
  // Reading `then` may run a hostile getter: inside the try, so it too becomes a rejection.
  try {
    const pending: unknown = call();
    if (!isThenable(pending)) {
      return Promise.reject(
        new NodeContractError(node.name, method, `returned ${describe(pending)} instead of a Promise`),
      );
    }
    return Promise.resolve(pending as PromiseLike<T>);
  } catch (error) {
    return Promise.reject(error);
  }
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * The checks of a node's replies against the port's contract, for nodes that do not check their own
 * (`LockNode.repliesChecked`: the library's Redis adapters parse every reply once, where they read it).
 */

/** Checks a node's acquire reply; a token or ttl that is not a safe integer never reaches a lock. */
export function checkedAcquireReply(node: LockNode, reply: unknown): AcquireReply {
  if (node.repliesChecked === true) return reply as AcquireReply;
  const value = reply as Partial<
    Record<'outcome' | 'token' | 'holderTtl' | 'uptime' | 'readers' | 'queued' | 'position' | 'time', unknown>
  > | null;
  const ok =
    typeof value === 'object' &&
    value !== null &&
    ((value.outcome === 'acquired' && isSafeAtLeast(value.token, 0) && isTime(value.time)) ||
      (value.outcome === 'busy' &&
        isSafeAtLeast(value.holderTtl, -2) &&
        (value.readers === undefined || value.readers === true) &&
        (value.queued === undefined || value.queued === true) &&
        (value.position === undefined || isSafeAtLeast(value.position, 1)) &&
        isTime(value.time)) ||
      (value.outcome === 'refused' && isSafeAtLeast(value.uptime, 0)));
  if (!ok) throw new NodeContractError(node.name, 'acquire', `resolved ${showReply(reply)}`);
  return reply as AcquireReply;
}

/** fence() and extend() resolve booleans. */
export function checkedFlag(node: LockNode, method: string, reply: unknown): boolean {
  if (node.repliesChecked === true) return reply as boolean;
  if (typeof reply !== 'boolean')
    throw new NodeContractError(node.name, method, `resolved ${showReply(reply)}`);
  return reply;
}

/** release() resolves how many keys it deleted. */
export function checkedCount(node: LockNode, reply: unknown): number {
  if (node.repliesChecked === true) return reply as number;
  if (!isSafeAtLeast(reply, 0))
    throw new NodeContractError(node.name, 'release', `resolved ${showReply(reply)}`);
  return reply as number;
}

/** An acquire answer's optional `time`: absent, or a node clock in epoch ms. */
function isTime(value: unknown): boolean {
  return value === undefined || (typeof value === 'number' && Number.isFinite(value) && value >= 0);
}

function isSafeAtLeast(value: unknown, min: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

function showReply(reply: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(reply) ?? describe(reply);
  } catch {
    text = describe(reply);
  }
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
