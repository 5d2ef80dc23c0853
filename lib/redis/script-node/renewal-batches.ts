import type { ExtendItem } from '../../core';
import { slotOf } from './cluster-slots';
import { type ScriptCall, extendManyCall } from '../scripts';

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

/** One EXTEND_MANY call of a batched renewal: the indexes of the items it renews, and its KEYS and ARGV. */
export interface RenewalCall {
  readonly indexes: readonly number[];
  readonly call: ScriptCall;
}

/** The calls built for a batch's items, per kind of node (plain, Cluster), while the batch lives. */
const built = new WeakMap<readonly ExtendItem[], { plain?: RenewalCall[]; cluster?: RenewalCall[] }>();

/**
 * The EXTEND_MANY calls that renew `items` ({@link renewalCalls}, each with its KEYS and ARGV), built once
 * per batch and shared by every node it is sent to: a batch asks each node with the same items, and the
 * calls depend only on them (and on whether the node is a Cluster), so building them again for each node
 * would only cost client CPU (per lock and node: its keys, four arguments). Kept while `items` lives.
 */
export function renewalScriptCalls(items: readonly ExtendItem[], cluster: boolean): readonly RenewalCall[] {
  let byKind = built.get(items);
  if (!byKind) built.set(items, (byKind = {}));
  const known = cluster ? byKind.cluster : byKind.plain;
  if (known) return known;
  const calls = renewalCalls(items, cluster).map((indexes): RenewalCall => ({
    indexes,
    call: extendManyCall(indexes.map((i) => items[i])),
  }));
  if (cluster) byKind.cluster = calls;
  else byKind.plain = calls;
  return calls;
}
