import type { ExtendItem } from '../core';
import { slotOf } from './cluster-slots';

/**
 * The most locks one EXTEND_MANY call renews: the script runs atomically, so a call this size keeps the
 * server busy for a fraction of a millisecond (docs/DESIGN.md §4) while a batch of thousands takes a few calls.
 */
export const LOCKS_PER_CALL = 250;

/**
 * Splits a batched renewal into script calls, as lists of item indexes: on a Cluster by slot first (one
 * script may only touch keys of one slot; all keys of one lock share its resource's slot, see refuseKeys),
 * then into calls of at most {@link LOCKS_PER_CALL} locks.
 */
export function renewalCalls(items: readonly ExtendItem[], cluster: boolean): number[][] {
  const calls: number[][] = [];
  if (!cluster) {
    for (let from = 0; from < items.length; from += LOCKS_PER_CALL) {
      const call: number[] = [];
      for (let i = from; i < Math.min(items.length, from + LOCKS_PER_CALL); i++) call.push(i);
      calls.push(call);
    }
    return calls;
  }
  const bySlot = new Map<number, number[]>();
  items.forEach((item, i) => {
    const slot = slotOf((item.readers ?? item.keys)[0]);
    let open = bySlot.get(slot);
    if (!open || open.length === LOCKS_PER_CALL) {
      open = [];
      calls.push(open);
      bySlot.set(slot, open);
    }
    open.push(i);
  });
  return calls;
}
