import { createHash } from 'node:crypto';

/** A Lua script with its SHA1, so nodes can call it by digest (EVALSHA) and fall back to EVAL. */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

function script(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * ACQUIRE. KEYS: the lock keys of every resource. ARGV[1]: owner value, ARGV[2]: ttl in ms.
 *
 * Guarantees, on this node:
 * - all-or-nothing: either every key is set to the owner with the ttl, or none is touched;
 * - a key held by another owner is never modified; the reply says which and for how much longer;
 * - a key already held by this same owner (a straggler from an earlier attempt of the same acquisition)
 *   counts as free and gets the new ttl, so a retry never blocks on the caller's own partial keys.
 *
 * Reply: `{1}` acquired, or `{0, holderPttl}` busy.
 */
export const ACQUIRE_SCRIPT = script(
  'acquire',
  `
for i = 1, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder and holder ~= ARGV[1] then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1}
`,
);

/**
 * EXTEND. KEYS: the lock keys. ARGV[1]: owner value, ARGV[2]: new ttl in ms.
 *
 * Guarantees: all-or-nothing, and only for the owner: if any key is missing or held by someone else,
 * nothing changes and 0 is returned; otherwise every key gets the new ttl and 1 is returned.
 */
export const EXTEND_SCRIPT = script(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`,
);

/**
 * RELEASE. KEYS: the lock keys. ARGV[1]: owner value.
 *
 * Guarantees: compare-and-delete per key; a key held by another owner (or already gone) is left alone, so
 * one caller can never release another's lock. Returns how many keys were deleted.
 */
export const RELEASE_SCRIPT = script(
  'release',
  `
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted
`,
);
