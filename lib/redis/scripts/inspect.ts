import type { KeyReading, NodeReading } from '../../core';
import { NOW_MS } from './fragments';
import { script } from './lua-script';
import { UnexpectedReplyError, integerOf } from './reply-checks';

/**
 * INSPECT: how one resource is held on a node, read-only (docs/DESIGN.md §16), and the parser of its reply.
 */

/** The most members of a readers set one inspection reads (the rest are counted). */
export const INSPECT_MEMBERS = 100;

/**
 * INSPECT (read-only, docs/DESIGN.md §16). KEYS: the keys to read. Returns the server's clock in ms, then per
 * key `{type}` — with `{'string', value, pttl}` for a string and `{'zset', pttl, count, member, score, ...}` (the
 * first 100 members by score) for a sorted set; any other type is only named.
 */
export const INSPECT_SCRIPT = script(
  NOW_MS +
    `
local out = { now_ms() }
for i = 1, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t == 'string' then
    out[#out + 1] = { t, redis.call('GET', KEYS[i]), redis.call('PTTL', KEYS[i]) }
  elseif t == 'zset' then
    local entry = { t, redis.call('PTTL', KEYS[i]), redis.call('ZCARD', KEYS[i]) }
    local members = redis.call('ZRANGE', KEYS[i], 0, ${INSPECT_MEMBERS - 1}, 'WITHSCORES')
    for j = 1, #members do entry[#entry + 1] = members[j] end
    out[#out + 1] = entry
  else
    out[#out + 1] = { t }
  end
end
return out
`,
);

/** The inspect script's reply (scripts.ts): the clock, then one entry per key, checked field by field. */
export function inspectReplyOf(node: string, raw: unknown, count: number): NodeReading {
  const fail = (problem: string): never => {
    throw new UnexpectedReplyError(node, 'the inspect script', raw, problem);
  };
  if (!Array.isArray(raw) || raw.length !== count + 1) return fail(`expected the clock and ${count} entries`);
  const time = integerOf(raw[0]);
  if (time === undefined || time < 0) return fail('the clock is not a whole number of ms');
  const keys = raw.slice(1).map((entry: unknown): KeyReading => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') return fail('an entry is not {type, ...}');
    const [type, ...rest] = entry as [string, ...unknown[]];
    if (type === 'none') return { type: 'none' };
    if (type === 'string') {
      const pttl = integerOf(rest[1]);
      if (typeof rest[0] !== 'string' || pttl === undefined)
        return fail('a string entry is not {value, pttl}');
      return { type: 'string', value: rest[0], pttl };
    }
    if (type === 'zset') {
      const pttl = integerOf(rest[0]);
      const size = integerOf(rest[1]);
      if (pttl === undefined || size === undefined || rest.length % 2 !== 0)
        return fail('a bad sorted-set entry');
      const members: [string, number][] = [];
      for (let i = 2; i < rest.length; i += 2) {
        const score = Number(rest[i + 1]);
        if (typeof rest[i] !== 'string' || !Number.isFinite(score)) return fail('a bad sorted-set member');
        members.push([rest[i] as string, score]);
      }
      return { type: 'zset', pttl, count: size, members };
    }
    return { type: 'other', name: type };
  });
  return { time, keys };
}
