/**
 * Named Lua fragments that several scripts are built from.
 */

/** Lua, shared by the scripts that need it: the server's `TIME` in whole ms (as `now_ms()`). */
export const NOW_MS = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

/**
 * Lua: returns 0 unless ARGV[1] is a live reader (an expiry after `nowms`) in each readers set KEYS[1..bound]
 * (docs/DESIGN.md §15).
 */
export function liveReaderIn(bound: string): string {
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
export const RAISE_FENCES = `
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
export function announce(channel: string, flag: string): string {
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
