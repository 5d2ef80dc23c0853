/**
 * ACQUIRE's fair waiting (docs/DESIGN.md §18), as named Lua fragments: the queue of tickets per resource, a
 * waiter joining it, the turn of its oldest live ticket once the lock is free, and the grant leaving it.
 *
 * KEYS after the guard markers, per resource: its queue (`<lock key>:queue`: ticket → arrival on this server's
 * clock), then its tickets' expiries (`:queue:live`: ticket → expiry), then its turn marker (`:queue:turn`:
 * `<ends>:<t|g>:<ticket>`, when the current turn ends, whether its ticket has been granted here since, whose
 * turn). ARGV[11]: '1' for a fair call ('' or absent: not fair), ARGV[12]: how long the acquisition has waited,
 * in ms. The ticket is the intent id; ARGV[10] (the intent's ttl) is also the ticket's — 0: the call does not
 * wait, so it checks the queue but takes no ticket.
 */

/** Whether this call is fair, and where its keys start. Runs after INTENT_ID. */
export const FAIR_ARGS = `
local fair = mode == 'w' and (ARGV[11] or '') ~= ''
local qbase = n * (ARGV[5] == '1' and 2 or 1) + rw + guard_keys
`;

/**
 * Lua functions: `queued_reply(code, value, nowms)` a busy answer — for a fair call that waits, after joining the
 * queue and with the ticket's place as a fourth element. For a fair call only (nil otherwise): `join_queue(nowms)`
 * takes or renews this acquisition's ticket on every resource (first arrival kept: ZADD NX) when the call waits;
 * `place_reply(code, value, nowms)` a busy answer with the ticket's place (the furthest back over the resources,
 * from 1) when it has a ticket; `earlier_turn(nowms)` answers how many ms an earlier live ticket's turn still
 * runs on any resource (nil: none); `leave_queue(nowms)` takes the ticket out on a grant and marks its own turn
 * granted. Each Lua function is a new closure on every call, so a call that is not fair makes one, not seven.
 */
export const FAIR_FUNCTIONS = `
local function queued_reply(code, value, nowms)
  return {code, value, nowms}
end
local join_queue, place_reply, live_head, read_turn, earlier_turn, leave_queue
-- Made only for a fair call: every function is a new closure on each call.
if fair then
function join_queue(nowms)
  local ttl = tonumber(ARGV[10])
  if ttl <= 0 then
    return
  end
  local arrival = nowms - tonumber(ARGV[12])
  for i = 1, n do
    local queue, live = KEYS[qbase + i], KEYS[qbase + n + i]
    redis.call('ZADD', queue, 'NX', arrival, intent_id)
    redis.call('ZADD', live, nowms + ttl, intent_id)
    if redis.call('PTTL', queue) < ttl then
      redis.call('PEXPIRE', queue, ttl)
    end
    if redis.call('PTTL', live) < ttl then
      redis.call('PEXPIRE', live, ttl)
    end
  end
end

function place_reply(code, value, nowms)
  if tonumber(ARGV[10]) <= 0 then
    return {code, value, nowms}
  end
  local place = 1
  for i = 1, n do
    local rank = redis.call('ZRANK', KEYS[qbase + i], intent_id)
    if rank then
      place = math.max(place, rank + 1)
    end
  end
  return {code, value, nowms, place}
end

function queued_reply(code, value, nowms)
  join_queue(nowms)
  return place_reply(code, value, nowms)
end

function live_head(i, nowms)
  local queue, live = KEYS[qbase + i], KEYS[qbase + n + i]
  local dead = redis.call('ZRANGEBYSCORE', live, '-inf', nowms, 'LIMIT', 0, 32)
  if #dead > 0 then
    redis.call('ZREM', queue, unpack(dead))
    redis.call('ZREM', live, unpack(dead))
  end
  for _ = 1, 32 do
    local head = redis.call('ZRANGE', queue, 0, 0)[1]
    if not head then
      return nil, nil
    end
    local expiry = tonumber(redis.call('ZSCORE', live, head))
    if expiry and expiry > nowms then
      return head, expiry
    end
    redis.call('ZREM', queue, head)
    redis.call('ZREM', live, head)
  end
  return nil, nil
end

-- The turn marker: '<ends>:<t|g>:<ticket>' — when the turn ends, whether its ticket has been granted here since
-- (g), and whose turn it is. A bare number (an older marker) is a turn of nobody in particular.
function read_turn(marker)
  local value = redis.call('GET', marker)
  if not value then
    return nil
  end
  local ends, state, owner = string.match(value, '^(%-?%d+):([tg]):(.*)$')
  if ends then
    return tonumber(ends), state, owner
  end
  ends = tonumber(value)
  if ends then
    return ends, 't', ''
  end
  return nil
end

function earlier_turn(nowms)
  local left = nil
  for i = 1, n do
    local head, expiry = live_head(i, nowms)
    if head and head ~= intent_id then
      -- A turn begins the first time the lock is found free with an earlier ticket waiting, and ends when that
      -- ticket would expire unless renewed (its holder retries well within): meanwhile only that ticket is
      -- granted, then anyone for as long again, then the next turn — so disagreeing nodes cannot stall the lock.
      -- A grant of the turn's ticket that missed its quorum elsewhere keeps the turn's end: its ticket is back
      -- at the head, and a turn begun again at each such grant would let disagreeing nodes stall the lock.
      local marker = KEYS[qbase + 2 * n + i]
      local ends, state, owner = read_turn(marker)
      if not ends or (state == 'g' and owner ~= head) then
        ends = expiry
        redis.call('SET', marker, string.format('%.0f:t:', ends) .. head, 'PX', 2 * (ends - nowms))
      end
      if nowms < ends then
        left = math.max(left or 0, ends - nowms)
      end
    end
  end
  return left
end

function leave_queue(nowms)
  for i = 1, n do
    redis.call('ZREM', KEYS[qbase + i], intent_id)
    redis.call('ZREM', KEYS[qbase + n + i], intent_id)
    -- The turn's own ticket granted during its turn: the next head gets a turn of its own, unless this
    -- ticket comes back first (its attempt missed the quorum), which then goes on with the turn it had.
    local marker = KEYS[qbase + 2 * n + i]
    local ends, state, owner = read_turn(marker)
    if ends and state == 't' and owner == intent_id and nowms < ends then
      local ttl = redis.call('PTTL', marker)
      if ttl > 0 then
        redis.call('SET', marker, string.format('%.0f:g:', ends) .. owner, 'PX', ttl)
      end
    end
  end
end
end
`;
