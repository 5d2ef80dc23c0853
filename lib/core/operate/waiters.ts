import type { KeyReading } from '../nodes';
import { ownerOf } from '../lock';

/** One fair waiter (docs/DESIGN.md §18) as inspection sees it on a node: its ticket in the queue. */
export interface LockWaiter {
  /** The waiter's owner label (the `owner` option of its instance); undefined for a ticket of unknown form. */
  readonly owner: string | undefined;
  /** A short fingerprint of the ticket (the same as the holder's `id` would be for its first attempt). */
  readonly id: string;
  /** How long it has waited, in ms, by the node's clock (its arrival counts its time queued in its process). */
  readonly waited: number;
}

/** The waiters of a resource over every node: how many, and the longest wait. */
export interface WaitingSummary {
  /** Distinct live tickets on any node. */
  readonly count: number;
  /** The longest wait among them, in ms. */
  readonly oldestWait: number;
}

/**
 * The live tickets of a node's queue, oldest first: `queue` holds ticket → arrival, `live` ticket → expiry (both
 * on the node's clock, `time`). A ticket missing from a `live` reading that was cut short counts as live.
 */
export function waitersOf(
  queue: KeyReading,
  live: KeyReading,
  time: number,
  fingerprint: (value: string) => string,
): LockWaiter[] {
  if (queue.type !== 'zset') return [];
  const expiries = live.type === 'zset' ? new Map(live.members) : new Map<string, number>();
  const complete = live.type === 'zset' && live.count <= live.members.length;
  const waiters: LockWaiter[] = [];
  for (const [ticket, arrival] of queue.members) {
    const expiry = expiries.get(ticket);
    if (expiry === undefined ? complete : expiry <= time) continue;
    waiters.push({
      owner: ownerOf(ticket)?.label,
      id: fingerprint(ticket),
      waited: Math.max(0, Math.round(time - arrival)),
    });
  }
  return waiters;
}

/** How many distinct waiters the nodes show, and the longest wait; undefined when none waits. */
export function waitingOf(
  perNode: readonly (readonly LockWaiter[] | undefined)[],
): WaitingSummary | undefined {
  const longest = new Map<string, number>();
  for (const waiters of perNode) {
    for (const waiter of waiters ?? [])
      longest.set(waiter.id, Math.max(longest.get(waiter.id) ?? 0, waiter.waited));
  }
  if (longest.size === 0) return undefined;
  return { count: longest.size, oldestWait: Math.max(...longest.values()) };
}
