import type { ExtendItem } from '../../lib/core';
import {
  LOCKS_PER_CALL,
  renewalCalls,
  renewalScriptCalls,
} from '../../lib/redis/script-node/renewal-batches';
import { slotOf } from '../../lib/redis/script-node/cluster-slots';
import { EXTEND_MANY_SCRIPT, EXTEND_WRITERS_SCRIPT } from '../../lib/redis/scripts';

/** Pure units: how a batched renewal is split into script calls (docs/DESIGN.md §4). */
describe('renewal batches: script calls per kind of lock', () => {
  const writer = (key: string, ttl = 1_000): ExtendItem => ({ keys: [key], owner: `o-${key}`, ttl });

  it('exclusive one-key locks of one ttl: calls of at most LOCKS_PER_CALL, in order, all EXTEND_WRITERS', () => {
    const items = Array.from({ length: 2 * LOCKS_PER_CALL + 3 }, (_, i) => writer(`k{${i}}`));
    const calls = renewalCalls(items, false);
    expect(calls.map((call) => call.length)).toEqual([LOCKS_PER_CALL, LOCKS_PER_CALL, 3]);
    expect(calls.flat()).toEqual(items.map((_, i) => i));
    const scripts = renewalScriptCalls(items, false);
    expect(scripts.every((call) => call.script === EXTEND_WRITERS_SCRIPT)).toBe(true);
    expect(scripts[2].call).toEqual({
      keys: ['k{500}', 'k{501}', 'k{502}'],
      args: [1_000, 'o-k{500}', 'o-k{501}', 'o-k{502}'],
    });
    expect(scripts[2].flagsOf('n', '101')).toEqual([true, false, true]);
    expect(() => scripts[2].flagsOf('n', '10')).toThrow(/3 characters of 0 or 1/);
  });

  it('mixed: writers grouped by ttl apart from readers and multi-key locks; every item exactly once', () => {
    const items: ExtendItem[] = [
      writer('a'),
      { keys: ['b', 'c'], owner: 'o-bc', ttl: 1_000 },
      writer('d', 2_000),
      { keys: ['e'], owner: 'o-e', ttl: 1_000, readers: ['e:readers'] },
      writer('f'),
    ];
    const calls = renewalCalls(items, false);
    expect(calls).toEqual([[0, 4], [1, 3], [2]]);
    const scripts = renewalScriptCalls(items, false);
    expect(scripts.map((call) => call.script)).toEqual([
      EXTEND_WRITERS_SCRIPT,
      EXTEND_MANY_SCRIPT,
      EXTEND_WRITERS_SCRIPT,
    ]);
    expect(scripts[2].call.args).toEqual([2_000, 'o-d']);
  });

  it('on a Cluster, one slot per call even when every lock is a writer of one ttl', () => {
    const items = ['{x}1', '{y}1', '{x}2', '{y}2'].map((key) => writer(key));
    const calls = renewalCalls(items, true);
    expect(calls).toEqual([
      [0, 2],
      [1, 3],
    ]);
    for (const call of calls) expect(new Set(call.map((i) => slotOf(items[i].keys[0]))).size).toBe(1);
  });
});
