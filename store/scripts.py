"""Lua sources of the store's scripts.

Every write is a script so that it is conditional and idempotent: running it twice (a retry after
a lost reply) leaves the same state as running it once. The follow and unfollow steps are written
once as Lua functions over one user's keys; the single-Redis scripts run both users' steps in one
atomic call, and each step touches only its own user's slot so it can also run alone on a cluster.

Times are epoch milliseconds from the server's clock (TIME), so every server process agrees on
the order of follows. Scores are whole numbers and are passed and returned as decimal strings.
"""

from __future__ import annotations

from store.lua import LuaScript

# The current time, unless the caller supplied one (imports keep their original times).
_NOW = """
local function now_ms(given)
  if given ~= nil and given ~= '' then return given end
  local t = redis.call('TIME')
  return string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
"""

# One side of a follow, on one user's slot: `member` joins `set` (following or fans); if the
# opposite set already holds `member`, the pair became mutual, at the later of the two times.
_ADD_SIDE = """
local function add_side(set, opposite, mutual, member, at)
  local added = redis.call('ZADD', set, 'NX', at, member)
  if added == 1 then
    local back = redis.call('ZSCORE', opposite, member)
    if back then
      local when = tonumber(at)
      if tonumber(back) > when then when = tonumber(back) end
      redis.call('ZADD', mutual, string.format('%.0f', when), member)
    end
  end
  return added
end
"""

_REMOVE_SIDE = """
local function remove_side(set, mutual, member)
  local removed = redis.call('ZREM', set, member)
  redis.call('ZREM', mutual, member)
  return removed
end
"""

# KEYS: profile:A profile:B following:A fans:A mutual:A fans:B following:B mutual:B
# ARGV: A B [at]
# Returns {status, changed, follow time, B's follow time of A or false}; status -1/-2 = A/B unknown.
FOLLOW = (
    _NOW
    + _ADD_SIDE
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false, false} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0, false, false} end
local at = now_ms(ARGV[3])
local changed = add_side(KEYS[3], KEYS[4], KEYS[5], ARGV[2], at)
add_side(KEYS[6], KEYS[7], KEYS[8], ARGV[1], redis.call('ZSCORE', KEYS[3], ARGV[2]))
return {0, changed, redis.call('ZSCORE', KEYS[3], ARGV[2]), redis.call('ZSCORE', KEYS[4], ARGV[2])}
"""
)

# KEYS: profile:A profile:B following:A mutual:A fans:B mutual:B fans:A
# ARGV: A B
# Returns {status, changed, B's follow time of A or false}.
UNFOLLOW = (
    _REMOVE_SIDE
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0, false} end
local changed = remove_side(KEYS[3], KEYS[4], ARGV[2])
remove_side(KEYS[5], KEYS[6], ARGV[1])
return {0, changed, redis.call('ZSCORE', KEYS[7], ARGV[2])}
"""
)

# KEYS: profile   ARGV: [createdAt] then field, value pairs.
# Returns {created (1/0), name, avatarUrl, createdAt}.
UPSERT_USER = (
    _NOW
    + """
local created = redis.call('HSETNX', KEYS[1], 'createdAt', now_ms(ARGV[1]))
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local p = redis.call('HMGET', KEYS[1], 'name', 'avatarUrl', 'createdAt')
return {created, p[1], p[2], p[3]}
"""
)

# KEYS: fans_seen profile   Returns the mark, epoch ms; -1 when the user is not registered.
MARK_FANS_SEEN = (
    _NOW
    + """
if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local at = now_ms(nil)
redis.call('SET', KEYS[1], at)
return at
"""
)

# KEYS: fans fans_seen   Returns how many fans followed after the mark (all of them without one).
NEW_FANS_COUNT = """
local seen = redis.call('GET', KEYS[2])
if not seen then return redis.call('ZCARD', KEYS[1]) end
return redis.call('ZCOUNT', KEYS[1], '(' .. seen, '+inf')
"""

# KEYS: profile keys   Returns name, avatarUrl, createdAt (or false) for each, flat. Reads only.
# One command instead of a pipeline of HMGETs: the client's per-command cost dominates here.
PROFILES = """
local out = {}
for _, key in ipairs(KEYS) do
  local p = redis.call('HMGET', key, 'name', 'avatarUrl', 'createdAt')
  out[#out + 1] = p[1]
  out[#out + 1] = p[2]
  out[#out + 1] = p[3]
end
return out
"""

# KEYS: viewer's following, viewer's fans   ARGV: user ids
# Returns {when the viewer followed each (or false), when each followed the viewer (or false)}.
# Both keys are the viewer's, so this is one slot even on a cluster. Reads only.
RELATIONS = """
return {redis.call('ZMSCORE', KEYS[1], unpack(ARGV)), redis.call('ZMSCORE', KEYS[2], unpack(ARGV))}
"""

# KEYS: following, fans, mutual keys of each user in turn   Returns their ZCARDs, flat. Reads only.
COUNTS = """
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('ZCARD', key) end
return out
"""

# A keyset page of a sorted set in newest-first order: score descending, ties by member
# descending (Redis' own ZREVRANGE order). Reads only.
# KEYS: zset   ARGV: mode ('first' | 'last'), has cursor ('1' | '0'), cursor score, cursor member, limit
# Returns {total, start, end, rows}: rows are ranks [start, end) as member, score pairs.
PAGE = """
local key = KEYS[1]
local mode, has_cursor, cs, cm, limit = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4], tonumber(ARGV[5])
local total = redis.call('ZCARD', key)

-- Byte order, as Redis orders members; Lua's own < follows the server's locale.
local function bytes_gt(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- How many entries come strictly before (cs, cm), and whether (cs, cm) itself is in the set.
local function before(score, member)
  local own = redis.call('ZSCORE', key, member)
  if own and tonumber(own) == tonumber(score) then
    return redis.call('ZREVRANK', key, member), true
  end
  -- The cursor's entry left the list: count the higher scores, then the ties above it.
  local n = redis.call('ZCOUNT', key, '(' .. score, '+inf')
  local offset = 0
  while true do
    local ties = redis.call('ZREVRANGEBYSCORE', key, score, score, 'LIMIT', offset, 256)
    for _, m in ipairs(ties) do
      if bytes_gt(m, member) then n = n + 1 else return n, false end
    end
    if #ties < 256 then return n, false end
    offset = offset + #ties
  end
end

local start, stop
if mode == 'first' then
  start = 0
  if has_cursor then
    local b, present = before(cs, cm)
    start = b
    if present then start = b + 1 end
  end
  stop = math.min(start + limit, total)
else
  stop = total
  if has_cursor then stop = before(cs, cm) end
  start = math.max(stop - limit, 0)
end
local rows = {}
if stop > start then rows = redis.call('ZREVRANGE', key, start, stop - 1, 'WITHSCORES') end
return {total, start, stop, rows}
"""


FOLLOW_SCRIPT = LuaScript(FOLLOW)
UNFOLLOW_SCRIPT = LuaScript(UNFOLLOW)
UPSERT_USER_SCRIPT = LuaScript(UPSERT_USER)
MARK_FANS_SEEN_SCRIPT = LuaScript(MARK_FANS_SEEN)
NEW_FANS_COUNT_SCRIPT = LuaScript(NEW_FANS_COUNT)
PAGE_SCRIPT = LuaScript(PAGE)
PROFILES_SCRIPT = LuaScript(PROFILES)
RELATIONS_SCRIPT = LuaScript(RELATIONS)
COUNTS_SCRIPT = LuaScript(COUNTS)
