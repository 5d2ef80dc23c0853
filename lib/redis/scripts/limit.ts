import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError, integerOf } from './reply-checks';

/**
 * LIMIT and READ_PERMITS: a semaphore's recorded number of permits (docs/DESIGN.md §14), and with it which
 * permits are free; their KEYS/ARGV and the parsers of their replies.
 */

/**
 * Lua: records the limit ARGV[1] at KEYS[1] when none is recorded and sets `limit` to the recorded one,
 * refreshing the record's ttl to at least ARGV[2] ms; a value that is not a number (another application's key)
 * is −1.
 */
const RECORD_LIMIT = `
local limit
local recorded = redis.call('GET', KEYS[1])
if not recorded then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  limit = tonumber(ARGV[1])
else
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  limit = tonumber(recorded) or -1
end
`;

/**
 * LIMIT. KEYS[1]: a semaphore's limit key (`<lock key>#permits`). ARGV[1]: the number of permits the caller
 * uses; ARGV[2]: how long the record lives at least, in ms. Returns the recorded limit: callers that disagree
 * about a resource's number of permits learn it (docs/DESIGN.md §14).
 */
export const LIMIT_SCRIPT = script(`${RECORD_LIMIT}return limit\n`);

/**
 * READ_PERMITS: LIMIT, and which permits are free. KEYS[2..n+1]: the permit keys; ARGV[1..2] as LIMIT's;
 * ARGV[3], optional: the permit (from 0) the caller tries next. Returns `{limit, flags}`, flags one character per
 * permit key in order: `1` where the node holds no such key, `0` where it does (64 permits in 64 bytes, one
 * EXISTS each) — or `{limit}` when the node holds no key at ARGV[3]'s permit: the caller's attempt on it, sent
 * right behind this read, decides, and the scan of every permit (most of this script's time) is skipped.
 */
export const READ_PERMITS_SCRIPT = script(
  `${RECORD_LIMIT}
local next_key = ARGV[3] and KEYS[2 + (tonumber(ARGV[3]) or -2)]
if next_key and redis.call('EXISTS', next_key) == 0 then
  return {limit}
end
local flags = {}
for i = 2, #KEYS do
  flags[i - 1] = redis.call('EXISTS', KEYS[i]) == 0 and '1' or '0'
end
return {limit, table.concat(flags)}
`,
);

/** LIMIT's KEYS and ARGV. */
export function limitCall(key: string, permits: number, ttl: number): ScriptCall {
  return { keys: [key], args: [permits, ttl] };
}

/** READ_PERMITS' KEYS and ARGV; `next`: the permit tried next (see READ_PERMITS_SCRIPT). */
export function readPermitsCall(
  key: string,
  permitKeys: readonly string[],
  permits: number,
  ttl: number,
  next?: number,
): ScriptCall {
  return { keys: [key, ...permitKeys], args: next === undefined ? [permits, ttl] : [permits, ttl, next] };
}

/** The limit script answers the recorded number of permits, or −1 for a value that is not a number. */
export function limitReplyOf(node: string, raw: unknown): number {
  const limit = integerOf(raw);
  if (limit !== undefined && limit >= -1) return limit;
  throw new UnexpectedReplyError(node, 'the limit script', raw, 'expected a whole number ≥ −1');
}

/**
 * READ_PERMITS answers `{limit, flags}`: the limit as LIMIT's, then exactly `count` characters of 0 or 1 — or,
 * when it was asked about the permit tried next (`next`) and that one is free, `{limit}` alone.
 */
export function readPermitsReplyOf(
  node: string,
  raw: unknown,
  count: number,
  next = false,
): { limit: number; free?: boolean[] } {
  if (Array.isArray(raw) && (raw.length === 2 || (next && raw.length === 1))) {
    const [limit, flags] = [integerOf(raw[0]), raw[1]];
    if (limit !== undefined && limit >= -1) {
      if (raw.length === 1) return { limit };
      if (typeof flags === 'string' && flags.length === count && /^[01]*$/.test(flags))
        return { limit, free: Array.from(flags, (flag) => flag === '1') };
    }
  }
  throw new UnexpectedReplyError(
    node,
    'the read-permits script',
    raw,
    `expected [a whole number ≥ −1, ${count} characters each 0 or 1]${next ? ' or [that number]' : ''}`,
  );
}
