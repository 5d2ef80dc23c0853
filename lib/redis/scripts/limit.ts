import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError, integerOf } from './reply-checks';

/**
 * LIMIT: a semaphore's recorded number of permits (docs/DESIGN.md §14), its KEYS/ARGV and the parser of its
 * reply.
 */

/**
 * LIMIT. KEYS[1]: a semaphore's limit key (`<lock key>#permits`). ARGV[1]: the number of permits the caller
 * uses; ARGV[2]: how long the record lives at least, in ms.
 *
 * Records the limit when none is recorded and returns the recorded one, refreshing its ttl to at least
 * ARGV[2]: callers that disagree about a resource's number of permits learn it (docs/DESIGN.md §14). A value
 * that is not a number (another application's key) is returned as -1.
 */
export const LIMIT_SCRIPT = script(
  `
local recorded = redis.call('GET', KEYS[1])
if not recorded then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return tonumber(ARGV[1])
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return tonumber(recorded) or -1
`,
);

/** LIMIT's KEYS and ARGV. */
export function limitCall(key: string, permits: number, ttl: number): ScriptCall {
  return { keys: [key], args: [permits, ttl] };
}

/** The limit script answers the recorded number of permits, or −1 for a value that is not a number. */
export function limitReplyOf(node: string, raw: unknown): number {
  const limit = integerOf(raw);
  if (limit !== undefined && limit >= -1) return limit;
  throw new UnexpectedReplyError(node, 'the limit script', raw, 'expected a whole number ≥ −1');
}
