import type { ExtendItem } from '../../core';
import { slotOf } from './cluster-slots';
import {
  EXTEND_MANY_SCRIPT,
  EXTEND_WRITERS_SCRIPT,
  type LuaScript,
  type ScriptCall,
  extendManyCall,
  extendWritersCall,
  flagsReplyOf,
  isSingleWriter,
  writerFlagsReplyOf,
} from '../scripts';

/**
 * The most locks one EXTEND_MANY call renews: the script runs atomically, so a call this size keeps the
 * server busy for a fraction of a millisecond (docs/DESIGN.md §4) while a batch of thousands takes a few calls.
 */
export const LOCKS_PER_CALL = 250;

/**
 * Splits a batched renewal into script calls, as lists of item indexes: exclusive locks of one key by ttl
 * (EXTEND_WRITERS renews them in two arguments each) apart from the others (EXTEND_MANY); on a Cluster by slot
 * too (one script may only touch keys of one slot; all keys of one lock share its resource's slot, see
 * refuseKeys); then into calls of at most {@link LOCKS_PER_CALL} locks. In each list, items keep their order.
 */
export function renewalCalls(items: readonly ExtendItem[], cluster: boolean): number[][] {
  const calls: number[][] = [];
  if (!cluster && sameWriters(items)) {
    // What most batches are: one group, in order, without a key per item.
    for (let from = 0; from < items.length; from += LOCKS_PER_CALL) {
      const call: number[] = [];
      for (let i = from; i < Math.min(items.length, from + LOCKS_PER_CALL); i++) call.push(i);
      calls.push(call);
    }
    return calls;
  }
  const open = new Map<string, number[]>();
  items.forEach((item, i) => {
    const kind = isSingleWriter(item) ? `w${item.ttl}` : 'many';
    const group = cluster ? `${slotOf((item.readers ?? item.keys)[0])}:${kind}` : kind;
    let call = open.get(group);
    if (!call || call.length === LOCKS_PER_CALL) {
      call = [];
      calls.push(call);
      open.set(group, call);
    }
    call.push(i);
  });
  return calls;
}

/** Whether every item is an exclusive lock of one key, all with the first one's ttl. */
function sameWriters(items: readonly ExtendItem[]): boolean {
  const ttl = items[0]?.ttl;
  for (let i = 0; i < items.length; i++) if (items[i].ttl !== ttl || !isSingleWriter(items[i])) return false;
  return true;
}

/** One script call of a batched renewal: the items it renews (indexes), its script, KEYS and ARGV, its parser. */
export interface RenewalCall {
  readonly indexes: readonly number[];
  readonly script: LuaScript;
  readonly call: ScriptCall;
  /** The call's reply as one flag per item of `indexes`, or UnexpectedReplyError. */
  readonly flagsOf: (node: string, raw: unknown) => boolean[];
}

/** The calls built for a batch's items, per kind of node (plain, Cluster), while the batch lives. */
const built = new WeakMap<readonly ExtendItem[], { plain?: RenewalCall[]; cluster?: RenewalCall[] }>();

/**
 * The script calls that renew `items` ({@link renewalCalls}, each with its script, KEYS and ARGV), built once
 * per batch and shared by every node it is sent to: a batch asks each node with the same items, and the
 * calls depend only on them (and on whether the node is a Cluster), so building them again for each node
 * would only cost client CPU. Kept while `items` lives.
 */
export function renewalScriptCalls(items: readonly ExtendItem[], cluster: boolean): readonly RenewalCall[] {
  let byKind = built.get(items);
  if (!byKind) built.set(items, (byKind = {}));
  const known = cluster ? byKind.cluster : byKind.plain;
  if (known) return known;
  const calls = renewalCalls(items, cluster).map((indexes): RenewalCall => {
    const chosen = indexes.map((i) => items[i]);
    const count = indexes.length;
    return isSingleWriter(chosen[0])
      ? {
          indexes,
          script: EXTEND_WRITERS_SCRIPT,
          call: extendWritersCall(chosen),
          flagsOf: (node, raw) => writerFlagsReplyOf(node, raw, count),
        }
      : {
          indexes,
          script: EXTEND_MANY_SCRIPT,
          call: extendManyCall(chosen),
          flagsOf: (node, raw) => flagsReplyOf(node, raw, count),
        };
  });
  if (cluster) byKind.cluster = calls;
  else byKind.plain = calls;
  return calls;
}
