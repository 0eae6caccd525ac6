-- A user's keys in the lifecycle scripts, at KEYS[b + offset] (store/graph/lifecycle.py, user_keys).
local PROFILE, ACCOUNT, FOLLOWING, FANS, MUTUAL, REQ_IN, REQ_OUT = 0, 1, 2, 3, 4, 5, 6
local BLOCKING, BLOCKED_BY, MUTING, MUTED_BY, KEPT_BY, KEPT_WITH = 7, 8, 9, 10, 11, 12
local WIDTH = 13
-- The account's own keys: a user's, then fans_seen, the import job, the follow limit's window.
local OWN_WIDTH = WIDTH + 3
local PEERS = 1 + OWN_WIDTH

local function members(key)
  return redis.call('ZRANGE', key, 0, -1)
end

local function time_of(score)
  if score then return tonumber(score) end
  return nil
end

-- X (whose account goes off) leaves the sets of M (active): the follows between them and X's
-- requests end for everyone else, kept in X's own sets. Returns 1 when M's sets had a follow.
local function detach(b, x)
  if redis.call('EXISTS', KEYS[b + PROFILE]) == 0 then return 0 end
  local had = redis.call('ZREM', KEYS[b + FOLLOWING], x) + redis.call('ZREM', KEYS[b + FANS], x)
  redis.call('ZREM', KEYS[b + MUTUAL], x)
  redis.call('ZREM', KEYS[b + REQ_IN], x)
  redis.call('ZREM', KEYS[b + REQ_OUT], x)
  if had > 0 then
    redis.call('SADD', KEYS[b + KEPT_BY], x)
    return 1
  end
  return 0
end

-- The follows X's sets keep with M come back into M's sets: X follows M since `out_t`, M follows
-- X since `in_t` (nil: no such follow). Returns 1 when they are back, 0 when they ended (M is
-- gone, being deleted, or one blocks the other), 2 when M's account is off too: they wait in M's
-- sets, and X's sets let go of them.
local function attach(b, x, out_t, in_t)
  redis.call('SREM', KEYS[b + KEPT_BY], x)
  if not out_t and not in_t then return 1 end
  local on = redis.call('EXISTS', KEYS[b + PROFILE]) == 1
  if not on then
    local state = redis.call('HGET', KEYS[b + ACCOUNT], 'state')
    if not state or state == 'DELETING' then return 0 end
  end
  if redis.call('ZSCORE', KEYS[b + BLOCKING], x) or redis.call('ZSCORE', KEYS[b + BLOCKED_BY], x) then
    return 0
  end
  if out_t then redis.call('ZADD', KEYS[b + FANS], string.format('%.0f', out_t), x) end
  if in_t then redis.call('ZADD', KEYS[b + FOLLOWING], string.format('%.0f', in_t), x) end
  if out_t and in_t then
    redis.call('ZADD', KEYS[b + MUTUAL], string.format('%.0f', math.max(out_t, in_t)), x)
  end
  if on then return 1 end
  redis.call('SADD', KEYS[b + KEPT_WITH], x)
  return 2
end

-- Every trace of X in M's sets.
local function purge(b, x)
  for _, o in ipairs({FOLLOWING, FANS, MUTUAL, REQ_IN, REQ_OUT, BLOCKING, BLOCKED_BY, MUTING, MUTED_BY}) do
    redis.call('ZREM', KEYS[b + o], x)
  end
  redis.call('SREM', KEYS[b + KEPT_BY], x)
  redis.call('SREM', KEYS[b + KEPT_WITH], x)
end

-- Which state of an account that is off overrides which: a suspension a deactivation, a deletion both.
local RANK = {DEACTIVATED = 1, SUSPENDED = 2, DELETING = 3}

-- X's account goes off (or, off already, takes `state` when it overrides the one it has). Returns the state it had ('ACTIVE', or
-- the account's), false when X is not registered.
local function flip_off(state, reason, at)
  if redis.call('EXISTS', KEYS[1 + PROFILE]) == 1 then
    redis.call('RENAME', KEYS[1 + PROFILE], KEYS[1 + ACCOUNT])
    redis.call('HSET', KEYS[1 + ACCOUNT], 'state', state, 'stateAt', at, 'stateReason', reason)
    return 'ACTIVE'
  end
  local had = redis.call('HGET', KEYS[1 + ACCOUNT], 'state')
  if had and RANK[state] > RANK[had] then
    redis.call('HSET', KEYS[1 + ACCOUNT], 'state', state, 'stateAt', at, 'stateReason', reason)
  end
  return had or false
end

-- X's account comes back on: X's sets keep only what came back, the mutual set follows from them.
local function flip_on(dropped, kept)
  for _, m in ipairs(dropped) do
    redis.call('ZREM', KEYS[1 + FOLLOWING], m)
    redis.call('ZREM', KEYS[1 + FANS], m)
  end
  for _, m in ipairs(kept) do
    redis.call('ZREM', KEYS[1 + FOLLOWING], m)
    redis.call('ZREM', KEYS[1 + FANS], m)
    redis.call('SADD', KEYS[1 + KEPT_BY], m)
  end
  redis.call('ZINTERSTORE', KEYS[1 + MUTUAL], 2, KEYS[1 + FOLLOWING], KEYS[1 + FANS], 'AGGREGATE', 'MAX')
  redis.call('DEL', KEYS[1 + KEPT_WITH])
  redis.call('HDEL', KEYS[1 + ACCOUNT], 'state', 'stateAt', 'stateReason')
  redis.call('RENAME', KEYS[1 + ACCOUNT], KEYS[1 + PROFILE])
end

-- Every key of X's own.
-- UNLINK: a celebrity's sets of a million members are freed in the background, where a DEL would
-- hold Redis for the time it takes to free them.
local function erase()
  for i = 1, OWN_WIDTH do redis.call('UNLINK', KEYS[i]) end
end

-- The ids of ARGV from `first` to the two the change log adds, as a set.
local function given(first)
  local set = {}
  for i = first, #ARGV - 2 do set[ARGV[i]] = true end
  return set
end

-- Whether every member of X's sets at `offsets` is in `set`.
local function covered(set, offsets)
  for _, o in ipairs(offsets) do
    local key = KEYS[1 + o]
    local list
    if o == KEPT_BY or o == KEPT_WITH then list = redis.call('SMEMBERS', key) else list = members(key) end
    for _, m in ipairs(list) do
      if not set[m] then return false end
    end
  end
  return true
end
