import { createHash } from 'node:crypto';
import type { AcquireRequest, ExtendItem, RevokeRequest } from '../../core';

/**
 * The Lua scripts that carry the guarantees of docs/DESIGN.md on each node, each with the function that
 * lays out its KEYS and ARGV (kept next to the script that reads them).
 */

/** Lua, shared by the scripts that need it: the server's `TIME` in whole ms (as `now_ms()`). */
const NOW_MS = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Lua: returns 0 unless ARGV[1] is a live reader (an expiry after `nowms`) in each readers set KEYS[1..bound]
 * (docs/DESIGN.md §15).
 */
function liveReaderIn(bound: string): string {
  return `
for i = 1, ${bound} do
  local expiry = tonumber(redis.call('ZSCORE', KEYS[i], ARGV[1]))
  if not expiry or expiry <= nowms then
    return 0
  end
end
`;
}

/**
 * Lua, the fencing write-back (docs/DESIGN.md §5): raises each fence counter KEYS[n+1..2n] to at least the
 * token ARGV[2], never lowering one; returns 1.
 */
const RAISE_FENCES = `
local token = tonumber(ARGV[2])
for i = n + 1, 2 * n do
  if (tonumber(redis.call('GET', KEYS[i])) or 0) < token then
    redis.call('SET', KEYS[i], ARGV[2], 'PX', 3600000)
  end
end
return 1
`;

/**
 * Lua statements announcing a release on `channel` (a Lua expression). With `flag` (a Lua expression) = 's' —
 * a Redis Cluster node — by sharded pub/sub (SPUBLISH, Redis 7): the message stays within the key's shard
 * instead of crossing the cluster bus to every node, as PUBLISH does. Where SPUBLISH is unknown (Redis 6) or
 * denied, PUBLISH; the subscribers, refused SSUBSCRIBE the same way, use SUBSCRIBE (`release-channels.ts`).
 * Inline rather than a Lua function: a local function would be a new closure on every call.
 */
function announce(channel: string, flag: string): string {
  return `
    if ${flag} ~= 's' then
      redis.call('PUBLISH', ${channel}, '1')
    else
      local reply = redis.pcall('SPUBLISH', ${channel}, '1')
      if type(reply) == 'table' and reply.err then
        redis.call('PUBLISH', ${channel}, '1')
      end
    end`;
}

/** A Lua script with its SHA1, so nodes can call it by digest (EVALSHA) and fall back to EVAL. */
export interface LuaScript {
  readonly source: string;
  readonly sha: string;
}

/** KEYS and ARGV of one script call. */
export interface ScriptCall {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
}

function script(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * How much of the server's run_id ACQUIRE gets (hex characters): 64 of its 160 random bits. A restarted
 * server restored from disk is still caught unless its new run_id starts with the same 16 characters (odds
 * 2^-64 per restart); the 24 characters left out are 24 bytes fewer on every acquire.
 */
export const RUN_ID_PREFIX = 16;

/**
 * ACQUIRE. KEYS: the lock keys of every resource (n of them), then — for read-write locks (ARGV[8] not '') —
 * the n readers keys and the n writer-intent keys, then — with fencing — the n fence counter keys, then —
 * with the restart guard — this node's boot marker and data-age marker. ARGV[1]: owner value, ARGV[2]: ttl in
 * ms, ARGV[3]: n, ARGV[4]: restart-guard window in ms (0 = off), ARGV[5]: 1 to raise the fence counters,
 * ARGV[6]: the first {@link RUN_ID_PREFIX} characters of the server's run_id as the client last learnt it (''
 * if unknown), ARGV[7]: 1 when the client knows INFO is not readable here (denied by ACL, unsupported in
 * scripts, or without a run_id), 2 when the INFO that told the client the run_id also said the server had been
 * up for at least the window (ARGV[4]), else 0, ARGV[8]: '' (a plain exclusive lock that ignores readers), 'w' (a writer) or
 * 'r' (a reader), ARGV[9]: the acquisition's intent id, or '' on its first attempt (the intent id is then
 * this attempt's owner value, and no earlier attempt can have left an intent to clear: every attempt has its
 * own owner value, docs/DESIGN.md §7), ARGV[10]: the writer intent's ttl in ms (0: no intent; only the
 * negative control of §15 sends 0).
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
 * Reply: `1` acquired without fencing (a plain integer is the cheapest reply), `{1, token}` acquired with
 * fencing, `{0, holderPttl}` busy (a writer holds it, or a writer's intent keeps readers out), `{4, ms}` busy
 * with readers (the last of them expires in ms), `{2, uptimeMs}` refused by uptime, `{3, dataAgeMs}` refused
 * by data age, `{5, key, type}` a marker key holds data that is not the library's.
 */
export const ACQUIRE_SCRIPT = script(
  NOW_MS +
    `
local n = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local mode = ARGV[8] or ''
local rw = mode ~= '' and 2 * n or 0
if window > 0 then
  local marks = n * (ARGV[5] == '1' and 2 or 1) + rw
  local boot, since = KEYS[marks + 1], KEYS[marks + 2]
  local portable = ARGV[7] == '1'
  local known = false
  if not portable then
    -- The boot marker is ours as '<run_id>:<ms>' (or a bare run_id, its earlier form); another type or
    -- another string is someone else's data: never overwritten, the reply names the key.
    local marker = redis.pcall('GET', boot)
    if type(marker) == 'table' then
      return {5, boot, redis.call('TYPE', boot)['ok']}
    end
    if ARGV[7] == '2' and marker and string.sub(marker, 1, ${RUN_ID_PREFIX}) == ARGV[6] then
      -- Fastest path: the marker starts with the run_id prefix of the server the client learnt (so it is ours,
      -- and this is that server), and that server had been up for the window already when the client read
      -- its INFO — uptime only grows while the run_id stays: no parsing, no TIME.
      known = true
    else
      local id, started = string.match(marker or '', '^(%w+):(%d+)$')
      if marker and not id and not string.match(marker, '^%w+$') then
        return {5, boot, 'string'}
      end
      -- Fast path: the boot marker holds the run_id the client learnt and when that server started, so a call
      -- with a larger window than the one that wrote the marker is still checked (TIME only, no INFO).
      if ARGV[6] ~= '' and id and string.sub(id, 1, ${RUN_ID_PREFIX}) == ARGV[6] then
        local up = now_ms() - tonumber(started)
        if up < window then
          return {2, math.max(0, up)}
        end
        known = true
      end
    end
  end
  if not known then
    -- The data-age marker is ours as whole ms; anything else is someone else's data, as above.
    local recorded = redis.pcall('GET', since)
    if type(recorded) == 'table' then
      return {5, since, redis.call('TYPE', since)['ok']}
    end
    if recorded and not string.match(recorded, '^%d+$') then
      return {5, since, 'string'}
    end
    local info = nil
    if not portable then
      info = redis.pcall('INFO', 'server')
      if type(info) ~= 'string' or not string.match(info, 'run_id:%w+') then
        info = nil
      end
    end
    local now = now_ms()
    local first = tonumber(recorded)
    if info then
      -- Whole wall-clock seconds now minus whole seconds at start: up to a second more than the real uptime,
      -- so one second is taken off to get a lower bound (docs/DESIGN.md §6).
      local uptime = math.max(0, (tonumber(string.match(info, 'uptime_in_seconds:(%d+)')) or 0) - 1) * 1000
      if uptime < window then
        return {2, uptime}
      end
      redis.call('SET', boot, string.match(info, 'run_id:(%w+)') .. ':' .. string.format('%.0f', now - uptime))
      if not first then
        redis.call('SET', since, string.format('%.0f', now - uptime))
      end
    else
      if not first then
        redis.call('SET', since, string.format('%.0f', now))
        first = now
      end
      if now - first < window then
        return {3, math.max(0, now - first)}
      end
    end
  end
end
local intent_id = ARGV[9]
if intent_id == '' then
  intent_id = ARGV[1]
end
if mode == 'r' then
  for i = 1, n do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      return {0, redis.call('PTTL', KEYS[i])}
    end
    local intent = redis.call('GET', KEYS[2 * n + i])
    if intent and intent ~= intent_id then
      return {0, redis.call('PTTL', KEYS[2 * n + i])}
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
else
  for i = 1, n do
    local holder = redis.call('GET', KEYS[i])
    if holder and holder ~= ARGV[1] then
      if mode == 'w' and ARGV[10] ~= '0' then
        redis.call('SET', KEYS[2 * n + i], intent_id, 'PX', ARGV[10])
      end
      return {0, redis.call('PTTL', KEYS[i])}
    end
  end
  if mode == 'w' then
    local nowms = nil
    for i = 1, n do
      if redis.call('EXISTS', KEYS[n + i]) == 1 then
        nowms = nowms or now_ms()
        redis.call('ZREMRANGEBYSCORE', KEYS[n + i], '-inf', nowms)
        local last = redis.call('ZRANGE', KEYS[n + i], -1, -1, 'WITHSCORES')
        if last[2] then
          for j = 1, n do
            if ARGV[10] ~= '0' then
              redis.call('SET', KEYS[2 * n + j], intent_id, 'PX', ARGV[10])
            end
          end
          return {4, math.max(0, tonumber(last[2]) - nowms)}
        end
      end
    end
    if ARGV[9] ~= '' then
      for i = 1, n do
        if redis.call('GET', KEYS[2 * n + i]) == intent_id then
          redis.call('DEL', KEYS[2 * n + i])
        end
      end
    end
  end
  for i = 1, n do
    redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
  end
end
if ARGV[5] ~= '1' then
  return 1
end
local token = 0
local now = redis.call('TIME')
local micros = tonumber(now[1]) * 1000000 + tonumber(now[2])
for i = n + rw + 1, 2 * n + rw do
  local counter = math.max((tonumber(redis.call('GET', KEYS[i])) or 0) + 1, micros)
  redis.call('SET', KEYS[i], string.format('%.0f', counter), 'PX', 3600000)
  token = math.max(token, counter)
end
return {1, string.format('%.0f', token)}
`,
);

/**
 * ACQUIRE's KEYS and ARGV for `request`. `runId`: the server's run_id as last learnt ('' if unknown);
 * `noInfo`: INFO is known not to be readable on this node (portable guard mode); `runUptime`: a lower bound of
 * that server's uptime when its run_id was learnt, in ms (0 if unknown).
 */
export function acquireCall(
  request: AcquireRequest,
  runId: string,
  noInfo: boolean,
  guardKey: string = request.guardKey,
  runUptime = 0,
): ScriptCall {
  const { keys, fenceKeys, guardWindow, readerKeys, intentKeys } = request;
  const fencing = fenceKeys.length > 0;
  const rw = readerKeys !== undefined && intentKeys !== undefined && readerKeys.length > 0;
  let all: readonly string[] = keys;
  if (fencing || guardWindow > 0 || rw) {
    const list = rw ? [...keys, ...readerKeys, ...intentKeys] : [...keys];
    if (fencing) list.push(...fenceKeys);
    if (guardWindow > 0) list.push(guardKey, `${guardKey}:since`);
    all = list;
  }
  const args: (string | number)[] = [
    request.owner,
    request.ttl,
    keys.length,
    guardWindow,
    fencing ? 1 : 0,
    runId.slice(0, RUN_ID_PREFIX),
    noInfo ? 1 : runId !== '' && runUptime >= guardWindow ? 2 : 0,
  ];
  if (rw) {
    // The first attempt's intent id is its own owner value: sent as '' (44 bytes fewer, and no intent to clear).
    const intent = request.intent === undefined || request.intent === request.owner ? '' : request.intent;
    args.push(request.mode === 'read' ? 'r' : 'w', intent, request.intentTtl ?? 0);
  }
  return { keys: all, args };
}

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

/** FENCE's KEYS and ARGV. */
export function fenceCall(
  keys: readonly string[],
  fenceKeys: readonly string[],
  owner: string,
  token: number,
): ScriptCall {
  return { keys: [...keys, ...fenceKeys], args: [owner, String(token)] };
}

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

/** EXTEND's KEYS and ARGV. */
export function extendCall(keys: readonly string[], owner: string, ttl: number): ScriptCall {
  return { keys, args: [owner, ttl] };
}

/** How many ARGV entries each lock takes in EXTEND_MANY. */
const EXTEND_MANY_STRIDE = 4;

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

/** RELEASE's (and READ_RELEASE's) KEYS and ARGV; `sharded`: the node is a Cluster (see `announce`). */
export function releaseCall(keys: readonly string[], owner: string, sharded = false): ScriptCall {
  return { keys, args: sharded ? [owner, 's'] : [owner] };
}

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

/** The most members of a readers set one inspection reads (the rest are counted). */
export const INSPECT_MEMBERS = 100;

/**
 * INSPECT (read-only, docs/DESIGN.md §16). KEYS: the keys to read. Returns the server's clock in ms, then per
 * key `{type}` — with `{'string', value, pttl}` for a string and `{'zset', pttl, count, member, score, ...}` (the
 * first 100 members by score) for a sorted set; any other type is only named.
 */
export const INSPECT_SCRIPT = script(
  NOW_MS +
    `
local out = { now_ms() }
for i = 1, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t == 'string' then
    out[#out + 1] = { t, redis.call('GET', KEYS[i]), redis.call('PTTL', KEYS[i]) }
  elseif t == 'zset' then
    local entry = { t, redis.call('PTTL', KEYS[i]), redis.call('ZCARD', KEYS[i]) }
    local members = redis.call('ZRANGE', KEYS[i], 0, ${INSPECT_MEMBERS - 1}, 'WITHSCORES')
    for j = 1, #members do entry[#entry + 1] = members[j] end
    out[#out + 1] = entry
  else
    out[#out + 1] = { t }
  end
end
return out
`,
);

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
