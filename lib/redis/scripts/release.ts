import { announce } from './fragments';
import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError } from './reply-checks';

/**
 * RELEASE and READ_RELEASE: the owner-checked release of a writer's or a reader's keys, announced to waiters,
 * their KEYS/ARGV and the parser of their reply.
 */

/**
 * RELEASE. KEYS: the lock keys. ARGV[1]: owner value, ARGV[2]: 's' on a Cluster node (sharded announcements).
 *
 * Guarantees: compare-and-delete per key; a key held by another owner (or already gone) is left alone, so
 * one caller can never release another's lock. Each deleted key is announced on the channel
 * `<key>:released`, so waiters wake at once instead of polling. Returns how many keys were deleted.
 */
export const RELEASE_SCRIPT = script(`
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])${announce("KEYS[i] .. ':released'", 'ARGV[2]')}
    deleted = deleted + 1
  end
end
return deleted
`);

/**
 * READ_RELEASE. KEYS: the n lock keys, then the n readers keys. ARGV[1]: owner value, ARGV[2]: as RELEASE's.
 * Removes the owner from each readers set (an empty set is deleted) and announces each removal on
 * `<lock key>:released`, where waiting writers listen. Returns how many entries were removed (expired ones
 * count: the reader is gone).
 */
export const READ_RELEASE_SCRIPT = script(`
local n = #KEYS / 2
local removed = 0
for i = 1, n do
  if redis.call('ZREM', KEYS[n + i], ARGV[1]) == 1 then
    removed = removed + 1${announce("KEYS[i] .. ':released'", 'ARGV[2]')}
  end
end
return removed
`);

/** RELEASE's (and READ_RELEASE's) KEYS and ARGV; `sharded`: the node is a Cluster (see `announce`). */
export function releaseCall(keys: readonly string[], owner: string, sharded = false): ScriptCall {
  return { keys, args: sharded ? [owner, 's'] : [owner] };
}

/** The release script answers how many of the `count` keys it deleted. */
export function releaseReplyOf(node: string, raw: unknown, count: number): number {
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= count) return raw;
  throw new UnexpectedReplyError(node, 'the release script', raw, `expected a count from 0 to ${count}`);
}
