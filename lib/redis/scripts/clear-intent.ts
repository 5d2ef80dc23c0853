import { announce } from './fragments';
import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError } from './reply-checks';

/**
 * CLEAR_INTENT: a writer that stops waiting takes its intent back (docs/DESIGN.md §15), and the readers it kept
 * out are told.
 */

/**
 * CLEAR_INTENT. KEYS: the writer-intent keys (`<lock key>:intent`), then — fair waiting, ARGV[3] > 0 — the
 * queues, the tickets' expiries and the turn markers of the same resources (`<lock key>:queue`, `:queue:live`,
 * `:queue:turn`).
 * ARGV[1]: the acquisition's intent id (its ticket too), ARGV[2]: as RELEASE's ARGV[2] ('' for none), ARGV[3]:
 * how many resources have queues (0: none).
 *
 * Guarantees: an intent is deleted only while it holds this id — the intent is last-writer-wins, so another
 * waiting writer's is never touched; only this ticket leaves a queue, and only a turn of this ticket ends; each deletion is announced on
 * `<lock key>:released`, where readers kept out by the intent, and waiters behind the ticket, wait. Returns how
 * many intents and tickets were deleted.
 */
export const CLEAR_INTENT_SCRIPT = script(`
local queues = tonumber(ARGV[3] or '0')
local intents = #KEYS - 3 * queues
local cleared = 0
for i = 1, intents do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    cleared = cleared + 1${announce("string.sub(KEYS[i], 1, -8) .. ':released'", 'ARGV[2]')}
  end
end
for i = 1, queues do
  local queue = KEYS[intents + i]
  redis.call('ZREM', KEYS[intents + queues + i], ARGV[1])
  if redis.call('ZREM', queue, ARGV[1]) == 1 then
    cleared = cleared + 1${announce("string.sub(queue, 1, -7) .. ':released'", 'ARGV[2]')}
  end
  -- A turn of this acquisition's ticket ends with it (granted and gone, or given up).
  local marker = KEYS[intents + 2 * queues + i]
  local turn = redis.call('GET', marker)
  if turn and string.match(turn, '^%-?%d+:[tg]:(.*)$') == ARGV[1] then
    redis.call('DEL', marker)
  end
end
return cleared
`);

/**
 * CLEAR_INTENT's KEYS and ARGV; `sharded`: the node is a Cluster (see `announce`); `queueKeys`: fair waiting's
 * keys as the acquire request has them (queues, expiries, turn markers: a turn of this ticket is deleted).
 */
export function clearIntentCall(
  intentKeys: readonly string[],
  intent: string,
  sharded = false,
  queueKeys?: readonly string[],
): ScriptCall {
  if (!queueKeys || queueKeys.length === 0)
    return { keys: intentKeys, args: sharded ? [intent, 's'] : [intent] };
  const n = queueKeys.length / 3;
  return { keys: [...intentKeys, ...queueKeys], args: [intent, sharded ? 's' : '', n] };
}

/** CLEAR_INTENT answers how many of the `count` intents (and tickets) it deleted. */
export function clearIntentReplyOf(node: string, raw: unknown, count: number): number {
  if (typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw <= count) return raw;
  throw new UnexpectedReplyError(node, 'the clear-intent script', raw, `expected a count from 0 to ${count}`);
}
