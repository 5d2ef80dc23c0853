import { type AcquireReply, type AcquireRequest, ForeignDataError } from '../../core';
import { NOW_MS } from './fragments';
import { type ACQUIRE_NEEDS_SINCE, RESTART_GUARD, RUN_ID_PREFIX, guardStateOf } from './restart-guard';
import { FAIR_ARGS, FAIR_FUNCTIONS } from './fair-queue';
import { type ScriptCall, script } from './lua-script';
import { UnexpectedReplyError, integerOf } from './reply-checks';

/**
 * ACQUIRE: the script that takes a lock on one node (restart guard, read-write rules, fencing), its KEYS/ARGV
 * layout and the parser of its reply.
 */

/**
 * ACQUIRE, its arguments: how many resources (n), the guard window, the mode, how many readers and intent keys
 * follow the lock keys.
 */
const ACQUIRE_ARGS = `
local n = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local mode = ARGV[8] or ''
-- A writer that will set no intent is sent without ARGV[9..10] and without the intent keys (KEYS[2n+1..3n]).
local intent_ttl = ARGV[10] or '0'
local rw = mode == '' and 0 or ((mode == 'w' and not ARGV[10]) and n or 2 * n)
-- ARGV[7] 3 and 4: as 0 and 2, sent without the data-age marker's key (the guard's fast paths do not read it).
local guard_state = ARGV[7]
local since_sent = guard_state ~= '3' and guard_state ~= '4'
if not since_sent then
  guard_state = guard_state == '4' and '2' or '0'
end
local guard_keys = window > 0 and (since_sent and 2 or 1) or 0
`;

/**
 * ACQUIRE, the acquisition's intent id: ARGV[9], or this attempt's owner value on a first attempt.
 */
const INTENT_ID = `local intent_id = ARGV[9] or ''
if intent_id == '' then
  intent_id = ARGV[1]
end
`;

/**
 * ACQUIRE, a reader (docs/DESIGN.md §15): busy while a writer holds a lock key or another intent is set; else
 * the owner joins every readers set with its own expiry on the server clock.
 */
const GRANT_READER = `  for i = 1, n do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      return {0, redis.call('PTTL', KEYS[i]), now_ms()}
    end
    local intent = redis.call('GET', KEYS[2 * n + i])
    if intent and intent ~= intent_id then
      return {0, redis.call('PTTL', KEYS[2 * n + i]), now_ms()}
    end
  end
  local nowms = now_ms()
  local ttl = tonumber(ARGV[2])
  for i = n + 1, 2 * n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', nowms)
    redis.call('ZADD', KEYS[i], nowms + ttl, ARGV[1])
    if redis.call('PTTL', KEYS[i]) < ttl then
      redis.call('PEXPIRE', KEYS[i], ttl)
    end
  end
`;

/**
 * ACQUIRE, a writer or a plain lock: busy while another owner holds a lock key (a writer then sets its intent),
 * or, for a writer, while a live reader remains; else every lock key is set to the owner with the ttl, and a
 * later attempt's own intent is cleared.
 */
const GRANT_WRITER = `  -- Fast path: none of the lock keys (nor, for a writer, the readers keys) exists here, so nothing else to
  -- read. Any key present (held, this owner's straggler, readers, another application's data) takes the checks.
  local keys_read = mode == 'w' and 2 * n or n
  local free = not fair and keys_read <= 64 and redis.call('EXISTS', unpack(KEYS, 1, keys_read)) == 0
  if not free then
    for i = 1, n do
      local holder = redis.call('GET', KEYS[i])
      if holder and holder ~= ARGV[1] then
        if mode == 'w' and intent_ttl ~= '0' then
          redis.call('SET', KEYS[2 * n + i], intent_id, 'PX', intent_ttl)
        end
        local nowms = now_ms()
        return queued_reply(0, redis.call('PTTL', KEYS[i]), nowms)
      end
    end
  end
  if mode == 'w' and not free then
    local nowms = nil
    for i = 1, n do
      if redis.call('EXISTS', KEYS[n + i]) == 1 then
        nowms = nowms or now_ms()
        redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', nowms)
        local last = redis.call('ZRANGE', KEYS[n + i], -1, -1, 'WITHSCORES')
        if last[2] then
          for j = 1, n do
            if intent_ttl ~= '0' then
              redis.call('SET', KEYS[2 * n + j], intent_id, 'PX', intent_ttl)
            end
          end
          return queued_reply(4, math.max(0, tonumber(last[2]) - nowms), nowms)
        end
      end
    end
    if fair then
      nowms = nowms or now_ms()
      -- In the queue before the turn is read (its first arrival, or the one it carries): a ticket taken out by
      -- a grant of an attempt that missed its quorum elsewhere must not pass the turn to the next waiter.
      join_queue(nowms)
      local turn = earlier_turn(nowms)
      if turn then
        return place_reply(6, turn, nowms)
      end
      leave_queue(nowms)
    end
  end
  if mode == 'w' and (ARGV[9] or '') ~= '' then
    for i = 1, n do
      if redis.call('GET', KEYS[2 * n + i]) == intent_id then
        redis.call('DEL', KEYS[2 * n + i])
      end
    end
  end
  for i = 1, n do
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  end
`;

/**
 * ACQUIRE, the grant's reply: `{1, 0, time}` without fencing; with it each fence counter becomes
 * max(counter + 1, server time in µs) and the reply is `{1, token, time}` with the largest (docs/DESIGN.md §5).
 * `time` is the server's clock in ms, for the client's clock-step check (§17).
 */
const FENCE_TOKEN = `if ARGV[5] ~= '1' then
  return {1, 0, now_ms()}
end
local token = 0
local now = redis.call('TIME')
local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
for i = n + rw + 1, 2 * n + rw do
  local counter = math.max((tonumber(redis.call('GET', KEYS[i])) or 0) + 1, micros)
  redis.call('SET', KEYS[i], string.format('%.0f', counter), 'PX', 3600000)
  token = math.max(token, counter)
end
return {1, string.format('%.0f', token), math.floor(micros / 1000)}
`;

/**
 * ACQUIRE. KEYS: the lock keys of every resource (n of them), then — for read-write locks (ARGV[8] not '') —
 * the n readers keys and the n writer-intent keys, then — with fencing — the n fence counter keys, then —
 * with the restart guard — this node's boot marker and data-age marker (the latter left out when ARGV[7] is 3
 * or 4). ARGV[1]: owner value, ARGV[2]: ttl in
 * ms, ARGV[3]: n, ARGV[4]: restart-guard window in ms (0 = off), ARGV[5]: 1 to raise the fence counters,
 * ARGV[6]: the first {@link RUN_ID_PREFIX} characters of the server's run_id as the client last learnt it (''
 * if unknown), ARGV[7]: 1 when the client knows INFO is not readable here (denied by ACL, unsupported in
 * scripts, or without a run_id), 2 when the INFO that told the client the run_id also said the server had been
 * up for at least the window (ARGV[4]), else 0 — 3 and 4 for 0 and 2 without the data-age marker's key, ARGV[8]: '' (a plain exclusive lock that ignores readers), 'w' (a writer) or
 * 'r' (a reader), ARGV[9]: the acquisition's intent id, or '' on its first attempt (the intent id is then
 * this attempt's owner value, and no earlier attempt can have left an intent to clear: every attempt has its
 * own owner value, docs/DESIGN.md §7), ARGV[10]: the writer intent's ttl in ms (0: no intent; a writer's first
 * attempt that sets none leaves ARGV[9..10] and its intent keys out), ARGV[11] and ARGV[12]: fair waiting's turn and the time waited (see
 * `fair-queue.ts`, whose keys follow the guard markers).
 *
 * Guarantees, on this node (docs/DESIGN.md §6):
 * - restart guard, precise mode (INFO readable): while the server has been up for less than the window,
 *   nothing is written and the reply says so. Uptime comes from the server itself (INFO inside the script),
 *   so a node that came back empty — or restored old keys from disk but lost the last writes — refuses
 *   atomically. INFO is skipped when the boot marker's run_id starts with the prefix the client learnt on its
 *   current connection (a restarted server has a new run_id, so it is checked again);
 * - restart guard, portable mode (INFO not readable): the data-age marker, a key without ttl, holds the server
 *   time (ms) at which this node's data was first seen; a node that lost its data lost the marker too, so its
 *   absence starts the window now (from the server's own TIME). Catches every empty restart; a node that
 *   restored the marker from disk but lost its last writes is not caught in this mode;
 * - the markers are never overwritten when they hold data that is not theirs (another type, or a string of
 *   another form: another application's key of the same name): nothing is written, the reply names the key;
 * - only declared keys are touched;
 * - all-or-nothing: either every lock key is set to the owner with the ttl, or none is touched;
 * - a key held by another owner is never modified; the reply says for how much longer it is held;
 * - a key already held by this same owner (a straggler from an earlier attempt of the same acquisition)
 *   counts as free and gets the new ttl, so a retry never blocks on the caller's own partial keys;
 * - fencing: each fence counter becomes max(counter + 1, server time in µs) and the reply carries the
 *   largest, so a counter lost with a restart starts again above every token handed out before
 *   (while clocks are sane). Counters expire after an hour without acquisitions.
 *
 * - read-write locks (docs/DESIGN.md §15): a writer is granted only while no other owner holds the lock key and
 *   no live reader is in the readers set (a sorted set: owner → expiry on this server's clock, entries past
 *   it removed first); when it is refused it sets the writer intent (its intent id, short ttl), which keeps
 *   new readers out. A reader is granted only while no writer holds the lock key and no other acquisition's
 *   intent is set; it is added to the readers set with its own expiry (server TIME + ttl), and the set lives
 *   at least as long as its longest reader. A granted writer clears its own intent.
 *
 * Reply: `{1, 0, time}` acquired without fencing, `{1, token, time}` acquired with fencing, `{0, holderPttl,
 * time}` busy (a writer holds it, or a writer's intent keeps readers out), `{4, ms, time}` busy with readers
 * (the last of them expires in ms; a fair waiter's busy answers add its place in the queue as a fourth element), `{2, uptimeMs}` refused by uptime, `{3, dataAgeMs}` refused by data age,
 * `{5, key, type}` a marker key holds data that is not the library's, `{7}` the guard needs the data-age marker's
 * key, left out of this call (nothing written: send it again with it), `{6, ms, time}` (fair waiting) the lock
 * is free but an earlier waiter's turn runs for ms more. `time`: the server's `TIME` in ms when
 * it answered (the client's clock-step check, docs/DESIGN.md §17).
 */
export const ACQUIRE_SCRIPT = script(
  NOW_MS +
    ACQUIRE_ARGS +
    RESTART_GUARD +
    INTENT_ID +
    FAIR_ARGS +
    FAIR_FUNCTIONS +
    "if mode == 'r' then\n" +
    GRANT_READER +
    'else\n' +
    GRANT_WRITER +
    'end\n' +
    FENCE_TOKEN,
);

/**
 * ACQUIRE's KEYS and ARGV for `request`. `runId`: the server's run_id as last learnt ('' if unknown);
 * `noInfo`: INFO is known not to be readable on this node (portable guard mode); `runUptime`: a lower bound of
 * that server's uptime when its run_id was learnt, in ms (0 if unknown). `sinceKey` false: the data-age marker's
 * key is left out where the guard's fast paths can decide (a run_id known, INFO readable); a call that needs it
 * is answered `{7}` ({@link ACQUIRE_NEEDS_SINCE}) and must be sent again with it.
 */
export function acquireCall(
  request: AcquireRequest,
  runId: string,
  noInfo: boolean,
  guardKey: string = request.guardKey,
  runUptime = 0,
  sinceKey = true,
): ScriptCall {
  const { keys, fenceKeys, guardWindow, readerKeys, intentKeys, queueKeys } = request;
  const fencing = fenceKeys.length > 0;
  // Only the guard's slow path reads the data-age marker; without a run_id or INFO every call takes it.
  const since = sinceKey || guardWindow === 0 || runId === '' || noInfo;
  const rw = readerKeys !== undefined && intentKeys !== undefined && readerKeys.length > 0;
  const fair = rw && queueKeys !== undefined && request.mode !== 'read';
  // A first attempt (no earlier intent of its own to clear) of a writer that sets no intent: no intent keys (§15).
  const first = request.intent === undefined || request.intent === request.owner;
  const intentless = rw && !fair && request.mode !== 'read' && !request.intentTtl && first;
  let all: readonly string[] = keys;
  if (fencing || guardWindow > 0 || rw) {
    const list = rw
      ? intentless
        ? [...keys, ...readerKeys]
        : [...keys, ...readerKeys, ...intentKeys]
      : [...keys];
    if (fencing) list.push(...fenceKeys);
    if (guardWindow > 0) list.push(guardKey);
    if (guardWindow > 0 && since) list.push(`${guardKey}:since`);
    if (fair) list.push(...queueKeys);
    all = list;
  }
  const args: (string | number)[] = [
    request.owner,
    request.ttl,
    keys.length,
    guardWindow,
    fencing ? 1 : 0,
    runId.slice(0, RUN_ID_PREFIX),
    guardStateOf(runId, noInfo, runUptime >= guardWindow, since),
  ];
  if (rw) {
    // The first attempt's intent id is its own owner value: sent as '' (44 bytes fewer, and no intent to clear).
    const intent = first ? '' : (request.intent ?? '');
    if (intentless) args.push('w');
    else args.push(request.mode === 'read' ? 'r' : 'w', intent, request.intentTtl ?? 0);
    if (fair) args.push(1, request.waited ?? 0);
  }
  return { keys: all, args };
}

/**
 * The acquire script's reply (`{1, token, time}`, `{0, holderPttl, time}`, `{4, readersMs, time}`,
 * `{2, uptimeMs}`, `{3, dataAgeMs}`), checked field by field: a token that is not a positive safe integer would
 * be written back to honest nodes' fence counters, and a NaN ttl, uptime or time would end up in waits,
 * messages and the clock-step check. `{5, key, type}` (a restart-guard marker holding another application's
 * data) throws ForeignDataError: that node's error vote, naming the key.
 */
export function acquireReplyOf(node: string, raw: unknown, fencing: boolean): AcquireReply {
  const fail = (problem: string): never => {
    throw new UnexpectedReplyError(node, 'the acquire script', raw, problem);
  };
  if (!Array.isArray(raw)) return fail('expected an array {code, value, ...}');
  const code: unknown = raw[0];
  if (code === 5) throw foreignMarkerOf(node, raw, fail);
  if (code === 2 || code === 3) {
    const uptime = raw.length === 2 ? integerOf(raw[1]) : undefined;
    if (uptime === undefined || uptime < 0) return fail('the uptime is not a whole number of ms ≥ 0');
    return { outcome: 'refused', uptime, basis: code === 3 ? 'data-age' : 'uptime' };
  }
  if (code !== 0 && code !== 1 && code !== 4 && code !== 6)
    return fail('unknown reply code (expected 0 to 6)');
  const time = raw.length === 3 || (raw.length === 4 && code !== 1) ? integerOf(raw[2]) : undefined;
  if (time === undefined || time < 0)
    return fail("expected {code, value, time} with the server's time in ms");
  const value = integerOf(raw[1]);
  const position = raw.length === 4 ? integerOf(raw[3]) : undefined;
  if (raw.length === 4 && (position === undefined || position < 1))
    return fail('the place in the queue is not a whole number ≥ 1');
  const place = position === undefined ? undefined : { position };
  if (code === 1) {
    if (!fencing) return value === 0 ? { outcome: 'acquired', token: 0, time } : fail('expected token 0');
    if (value === undefined || value <= 0) return fail('the fencing token is not a positive safe integer');
    return { outcome: 'acquired', token: value, time };
  }
  if (code === 0) {
    if (value === undefined || value < -2) return fail("the holder's ttl is not a PTTL reply");
    return { outcome: 'busy', holderTtl: value, time, ...place };
  }
  if (code === 6) {
    if (value === undefined || value <= 0) return fail("the turn's ms left is not a whole number > 0");
    return { outcome: 'busy', holderTtl: value, queued: true, time, ...place };
  }
  if (value === undefined || value < 0) return fail("the readers' ttl is not a whole number of ms ≥ 0");
  return { outcome: 'busy', holderTtl: value, readers: true, time, ...place };
}

/** `{5, key, type}`: a restart-guard marker key holds data that is not the library's (scripts.ts). */
function foreignMarkerOf(node: string, raw: unknown[], fail: (problem: string) => never): ForeignDataError {
  const [, key, found] = raw;
  if (
    raw.length !== 3 ||
    typeof key !== 'string' ||
    key.length === 0 ||
    typeof found !== 'string' ||
    !/^[a-z][a-z-]{0,30}$/.test(found)
  ) {
    return fail('a foreign-marker reply that is not {5, key, type}');
  }
  return new ForeignDataError(node, key, found);
}
