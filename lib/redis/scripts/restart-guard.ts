/**
 * ACQUIRE's restart guard (docs/DESIGN.md §6), as a named Lua fragment, and the state its caller sends
 * (ARGV[7]). Runs after ACQUIRE_ARGS, which sets `n`, `window`, `rw`, `guard_state` and `since_sent`.
 */

/**
 * How much of the server's run_id ACQUIRE gets (hex characters): 64 of its 160 random bits. A restarted
 * server restored from disk is still caught unless its new run_id starts with the same 16 characters (odds
 * 2^-64 per restart); the 24 characters left out are 24 bytes fewer on every acquire.
 */
export const RUN_ID_PREFIX = 16;

/**
 * ACQUIRE, the restart guard (docs/DESIGN.md §6): returns `{2, uptime}` or `{3, dataAge}` while this node is
 * inside its window, `{5, key, type}` when a marker holds foreign data; writes nothing else.
 */
export const RESTART_GUARD = `if window > 0 then
  local marks = n * (ARGV[5] == '1' and 2 or 1) + rw
  local boot, since = KEYS[marks + 1], since_sent and KEYS[marks + 2] or nil
  local portable = guard_state == '1'
  local known = false
  if not portable then
    -- The boot marker is ours as '<run_id>:<ms>' (or a bare run_id, its earlier form); another type or
    -- another string is someone else's data: never overwritten, the reply names the key.
    local marker = redis.pcall('GET', boot)
    if type(marker) == 'table' then
      return {5, boot, redis.call('TYPE', boot)['ok']}
    end
    if guard_state == '2' and marker and string.sub(marker, 1, ${RUN_ID_PREFIX}) == ARGV[6] then
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
    if not since_sent then
      -- Asked without the data-age marker's key, which the slow path needs: sent again with it.
      return {7}
    end
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
`;

/**
 * ACQUIRE's ARGV[7]: 1 INFO not readable; 2 the run_id known, learnt from an INFO that showed the window
 * passed; 0 otherwise — 3 and 4 for 0 and 2 sent without the data-age marker's key (`sinceKey` false).
 */
export function guardStateOf(
  runId: string,
  noInfo: boolean,
  upForWindow: boolean,
  sinceKey: boolean,
): number {
  if (noInfo) return 1;
  if (runId === '') return 0;
  if (sinceKey) return upForWindow ? 2 : 0;
  return upForWindow ? 4 : 3;
}

/** ACQUIRE's answer to a call sent without the data-age marker's key that needs it: send it again with it. */
export const ACQUIRE_NEEDS_SINCE = 7;
