import { announce } from './fragments';
import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError } from './reply-checks';

/**
 * CLEAR_INTENT: a writer that stops waiting takes its intent back (docs/DESIGN.md §15), and the readers it kept
 * out are told.
 */

/**
 * CLEAR_INTENT. KEYS: the writer-intent keys (`<lock key>:intent`). ARGV[1]: the acquisition's intent id,
 * ARGV[2]: as RELEASE's ARGV[2].
 *
 * Guarantees: an intent is deleted only while it holds this id — the intent is last-writer-wins, so another
 * waiting writer's is never touched; each deletion is announced on `<lock key>:released`, where readers kept
 * out by it wait. Returns how many intents were deleted.
 */
export const CLEAR_INTENT_SCRIPT = script(`
local cleared = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    cleared = cleared + 1${announce("string.sub(KEYS[i], 1, -8) .. ':released'", 'ARGV[2]')}
  end
end
return cleared
`);

/** CLEAR_INTENT's KEYS and ARGV; `sharded`: the node is a Cluster (see `announce`). */
export function clearIntentCall(intentKeys: readonly string[], intent: string, sharded = false): ScriptCall {
  return { keys: intentKeys, args: sharded ? [intent, 's'] : [intent] };
}

/** CLEAR_INTENT answers how many of the `count` intents it deleted. */
export function clearIntentReplyOf(node: string, raw: unknown, count: number): number {
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= count) return raw;
  throw new UnexpectedReplyError(node, 'the clear-intent script', raw, `expected a count from 0 to ${count}`);
}
