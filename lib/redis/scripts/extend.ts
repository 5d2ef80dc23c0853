import { NOW_MS, liveReaderIn } from './fragments';
import { type ScriptCall, script } from './lua-script';

/**
 * EXTEND and READ_EXTEND: the owner-checked extension of one lock (docs/DESIGN.md §4), and their KEYS/ARGV; the
 * reply is a flag (`flagReplyOf`).
 */

/**
 * EXTEND. KEYS: the lock keys. ARGV[1]: owner value, ARGV[2]: new ttl in ms.
 *
 * Guarantees: all-or-nothing, and only for the owner: if any key is missing or held by someone else,
 * nothing changes and 0 is returned; otherwise every key gets the new ttl and 1 is returned.
 */
export const EXTEND_SCRIPT = script(
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
 * READ_EXTEND. KEYS: the n readers keys. ARGV[1]: owner value, ARGV[2]: new ttl in ms. All-or-nothing: when
 * the owner is a live reader in every set, each entry's expiry becomes now + ttl (server clock) and each set
 * lives at least that long; returns 1, else 0 and nothing changes.
 */
export const READ_EXTEND_SCRIPT = script(
  NOW_MS +
    `
local nowms = now_ms()
` +
    liveReaderIn('#KEYS') +
    `
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  redis.call('ZADD', KEYS[i], 'XX', nowms + ttl, ARGV[1])
  if redis.call('PTTL', KEYS[i]) < ttl then
    redis.call('PEXPIRE', KEYS[i], ttl)
  end
end
return 1
`,
);

/** EXTEND's KEYS and ARGV. */
export function extendCall(keys: readonly string[], owner: string, ttl: number): ScriptCall {
  return { keys, args: [owner, ttl] };
}
