import type { ExtendItem } from '../../core';
import { NOW_MS } from './fragments';
import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError } from './reply-checks';

/**
 * EXTEND_MANY: the batched renewal of many locks in one call (docs/DESIGN.md §4), its KEYS/ARGV and the parser
 * of its reply.
 */

/** How many ARGV entries each lock takes in EXTEND_MANY. */
export const EXTEND_MANY_STRIDE = 4;

/**
 * EXTEND_MANY, the batched renewal (docs/DESIGN.md §4). KEYS: every lock's keys, one lock after another (a
 * read lock's readers sets, otherwise its lock keys). ARGV: per lock, four entries: how many of KEYS are its
 * own, 'r' (a read lock) or 'w', its owner value, its new ttl in ms.
 *
 * Guarantees, per lock and exactly as EXTEND / READ_EXTEND for that lock alone: all-or-nothing and only for
 * the owner. Returns one 1 or 0 per lock, in order. The server's clock is read once, and only when a read
 * lock is in the batch.
 */
export const EXTEND_MANY_SCRIPT = script(
  NOW_MS +
    `
local flags = {}
local first = 0
local nowms
for a = 1, #ARGV, ${EXTEND_MANY_STRIDE} do
  local count, owner, ttl = tonumber(ARGV[a]), ARGV[a + 2], tonumber(ARGV[a + 3])
  local last = first + count
  local held = 1
  if ARGV[a + 1] == 'r' then
    nowms = nowms or now_ms()
    for i = first + 1, last do
      local expiry = tonumber(redis.call('ZSCORE', KEYS[i], owner))
      if not expiry or expiry <= nowms then
        held = 0
        break
      end
    end
    if held == 1 then
      for i = first + 1, last do
        redis.call('ZADD', KEYS[i], 'XX', nowms + ttl, owner)
        if redis.call('PTTL', KEYS[i]) < ttl then
          redis.call('PEXPIRE', KEYS[i], ttl)
        end
      end
    end
  else
    for i = first + 1, last do
      if redis.call('GET', KEYS[i]) ~= owner then
        held = 0
        break
      end
    end
    if held == 1 then
      for i = first + 1, last do
        redis.call('PEXPIRE', KEYS[i], ARGV[a + 3])
      end
    end
  end
  flags[#flags + 1] = held
  first = last
end
return flags
`,
);

/** EXTEND_MANY's KEYS and ARGV for `items` (docs/DESIGN.md §4). */
export function extendManyCall(items: readonly ExtendItem[]): ScriptCall {
  const keys: string[] = [];
  const args: (string | number)[] = new Array(items.length * EXTEND_MANY_STRIDE);
  let a = 0;
  for (const { keys: lockKeys, owner, ttl, readers } of items) {
    const own = readers ?? lockKeys;
    for (const key of own) keys.push(key);
    args[a++] = own.length;
    args[a++] = readers ? 'r' : 'w';
    args[a++] = owner;
    args[a++] = ttl;
  }
  return { keys, args };
}

/**
 * EXTEND_WRITERS, the batched renewal of exclusive locks of one key each that share a ttl — what most batches
 * hold (docs/DESIGN.md §4). KEYS: one lock key per lock. ARGV[1]: the new ttl in ms; ARGV[1 + i]: the owner
 * value of KEYS[i]. Per lock exactly EXTEND_MANY's 'w' branch for a lock of one key (PEXPIRE only while it
 * holds the owner), in two arguments instead of five. Returns one character per lock, in order: `1` renewed,
 * `0` not the owner.
 */
export const EXTEND_WRITERS_SCRIPT = script(
  `
local flags = {}
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i + 1] then
    redis.call('PEXPIRE', KEYS[i], ARGV[1])
    flags[i] = '1'
  else
    flags[i] = '0'
  end
end
return table.concat(flags)
`,
);

/** Whether EXTEND_WRITERS can renew `item`: an exclusive lock of one key. */
export function isSingleWriter(item: ExtendItem): boolean {
  return item.readers === undefined && item.keys.length === 1;
}

/** EXTEND_WRITERS' KEYS and ARGV for `items`, every one {@link isSingleWriter}, all with `items[0]`'s ttl. */
export function extendWritersCall(items: readonly ExtendItem[]): ScriptCall {
  const keys: string[] = new Array(items.length);
  const args: (string | number)[] = new Array(items.length + 1);
  args[0] = items[0].ttl;
  for (let i = 0; i < items.length; i++) {
    keys[i] = items[i].keys[0];
    args[i + 1] = items[i].owner;
  }
  return { keys, args };
}

/** EXTEND_WRITERS answers exactly `count` characters, each 0 or 1. */
export function writerFlagsReplyOf(node: string, raw: unknown, count: number): boolean[] {
  if (typeof raw === 'string' && raw.length === count && /^[01]*$/.test(raw)) {
    const flags: boolean[] = new Array(count);
    for (let i = 0; i < count; i++) flags[i] = raw.charCodeAt(i) === 49; // '1'
    return flags;
  }
  throw new UnexpectedReplyError(
    node,
    'the batched extend script',
    raw,
    `expected ${count} characters of 0 or 1`,
  );
}

/** The batched extend script answers one 0 or 1 per lock of its call. */
export function flagsReplyOf(node: string, raw: unknown, count: number): boolean[] {
  if (Array.isArray(raw) && raw.length === count && raw.every((flag) => flag === 0 || flag === 1)) {
    return raw.map((flag) => flag === 1);
  }
  throw new UnexpectedReplyError(node, 'the batched extend script', raw, `expected ${count} flags of 0 or 1`);
}
