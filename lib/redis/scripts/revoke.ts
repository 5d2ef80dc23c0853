import type { RevokeRequest } from '../../core';
import { announce } from './fragments';
import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError } from './reply-checks';

/**
 * REVOKE: deleting a resource's lock whoever holds it (docs/DESIGN.md §16), its KEYS/ARGV and the parser of its
 * reply.
 */

/**
 * REVOKE (docs/DESIGN.md §16). KEYS: the keys of one resource to delete whoever holds them — first the ARGV[2]
 * lock keys (the lock key, a semaphore's permit keys), then its readers set and writer intent; never its fence
 * counter, so later tokens still exceed the revoked holder's. ARGV[1]: the revocation channel, ARGV[3]: the
 * message, ARGV[4]: as RELEASE's ARGV[2]. Each deleted lock key is announced on `<key>:released` (waiters wake)
 * and, when anything was deleted, the message on the revocation channel (the holder aborts; by PUBLISH on a
 * Cluster too: every holder listens there, whatever its slots). Returns how many keys were deleted.
 */
export const REVOKE_SCRIPT = script(`
local deleted = 0
local locks = tonumber(ARGV[2])
for i = 1, #KEYS do
  if redis.call('DEL', KEYS[i]) == 1 then
    deleted = deleted + 1
    if i <= locks then${announce("KEYS[i] .. ':released'", 'ARGV[4]')}
    end
  end
end
if deleted > 0 then redis.call('PUBLISH', ARGV[1], ARGV[3]) end
return deleted
`);

/** REVOKE's KEYS and ARGV; `sharded` as {@link releaseCall}'s. */
export function revokeCall({ keys, lockKeys, channel, message }: RevokeRequest, sharded = false): ScriptCall {
  return { keys, args: sharded ? [channel, lockKeys, message, 's'] : [channel, lockKeys, message] };
}

/** The revoke script answers how many of the `count` keys it deleted. */
export function revokeReplyOf(node: string, raw: unknown, count: number): number {
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= count) return raw;
  throw new UnexpectedReplyError(node, 'the revoke script', raw, `expected a count from 0 to ${count}`);
}
