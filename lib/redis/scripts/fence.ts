import { NOW_MS, RAISE_FENCES, liveReaderIn } from './fragments';
import { type ScriptCall, script } from './lua-script';

/**
 * FENCE and READ_FENCE: the fencing token's write-back (docs/DESIGN.md §5) for a writer and for a reader, and
 * their KEYS/ARGV; the reply is a flag (`flagReplyOf`).
 */

/**
 * FENCE (the write-back of a fencing token). KEYS: the n lock keys, then the n fence counter keys.
 * ARGV[1]: owner value, ARGV[2]: token.
 *
 * Guarantees: only while every lock key is still held by this owner, each fence counter is raised to at
 * least the token (never lowered). Returns 1 when written, 0 when the lock is no longer held here. A later
 * holder whose quorum includes this node then draws a larger token.
 */
export const FENCE_SCRIPT = script(
  `
local n = #KEYS / 2
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
` + RAISE_FENCES,
);

/**
 * READ_FENCE (the write-back of a reader's fencing token). KEYS: the n readers keys, then the n fence counter
 * keys. ARGV[1]: owner value, ARGV[2]: token. As FENCE, with "held" meaning: the owner is in every readers set
 * with an expiry still ahead on this server's clock.
 */
export const READ_FENCE_SCRIPT = script(
  NOW_MS +
    `
local n = #KEYS / 2
local nowms = now_ms()
` +
    liveReaderIn('n') +
    RAISE_FENCES,
);

/** FENCE's KEYS and ARGV. */
export function fenceCall(
  keys: readonly string[],
  fenceKeys: readonly string[],
  owner: string,
  token: number,
): ScriptCall {
  return { keys: [...keys, ...fenceKeys], args: [owner, String(token)] };
}
