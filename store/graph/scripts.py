"""Lua sources of the store's scripts.

Every write is a script so that it is conditional and idempotent: running it twice (a retry after
a lost reply) leaves the same state as running it once. The follow and unfollow steps are written
once as Lua functions over one user's keys; the single-Redis scripts run both users' steps in one
atomic call; on Redis Cluster each step runs alone, on its own user's slot.

Times are epoch milliseconds from the server's clock (TIME), so every server process agrees on
the order of follows. Scores are whole numbers and are passed and returned as decimal strings.
"""

from __future__ import annotations

from followgraph.store.redis.lua import KeyedRead, LuaScript, ReadCommand

# The current time, unless the caller supplied one (imports keep their original times).
NOW = """
local function now_ms(given)
  if given ~= nil and given ~= '' then return given end
  local t = redis.call('TIME')
  return string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
"""

# The change log (store/graph/events.py). Every writing script takes three more inputs after its own:
# the stream as its last key, then the acting user's id and the stream's approximate cap as its
# last two arguments (store.events.logged adds them). An event is appended only when something
# changed, so a retried script adds none; it is written in the same atomic call as the change.
LOG = """
local ME = ARGV[#ARGV - 1]
local function log_event(kind, actor, target, at, extra)
  local fields = {'k', kind, 'a', actor}
  if target then
    fields[#fields + 1] = 't'
    fields[#fields + 1] = target
  end
  fields[#fields + 1] = 'at'
  fields[#fields + 1] = at
  for _, v in ipairs(extra or {}) do fields[#fields + 1] = v end
  redis.call('XADD', KEYS[#KEYS], 'MAXLEN', '~', ARGV[#ARGV], '*', unpack(fields))
end
"""

# The two steps of a follow A -> B, each on one user's slot. A's step comes first: A's following set
# is the source of truth, so a crash between the steps leaves only derived entries behind, which a
# retry of the follow (or `followgraph repair`) completes.
#
# follow_out, on A's slot: B joins following:A (keeping an existing follow's time); if B already
# follows A, the pair becomes mutual at the later of the two times. Returns 1 if B was added.
# follow_in, on B's slot: A is B's fan at `at`, A's follow time, overwriting whatever a half-done
# earlier change left; mutual again if B follows A. Both are idempotent.
FOLLOW_STEPS = """
local function mutual_if_back(opposite, mutual, member, at)
  local back = redis.call('ZSCORE', opposite, member)
  if back then
    local when = tonumber(at)
    if tonumber(back) > when then when = tonumber(back) end
    redis.call('ZADD', mutual, string.format('%.0f', when), member)
  end
end

local function follow_out(following, fans, mutual, member, at)
  local added = redis.call('ZADD', following, 'NX', at, member)
  if added == 1 then mutual_if_back(fans, mutual, member, at) end
  return added
end

local function follow_in(fans, following, mutual, member, at)
  redis.call('ZADD', fans, at, member)
  mutual_if_back(following, mutual, member, at)
end
"""

# unfollow_out on A's slot, unfollow_in on B's: remove the follow and the mutual entry.
_UNFOLLOW_STEP = """
local function unfollow_step(set, mutual, member)
  local removed = redis.call('ZREM', set, member)
  redis.call('ZREM', mutual, member)
  return removed
end
"""

# The event of an unfollow of `followee` by ME (`followed`: 1 when a follow ended, 0 when only a
# request did). When the followee asked for it: a fan removal, or the rejection of the request.
_UNFOLLOW_EVENT = """
local function log_unfollow(followee, removed_by_followee, followed)
  local at = now_ms(nil)
  if removed_by_followee ~= '1' then log_event('UNFOLLOW', ME, followee, at)
  elseif followed == 1 then log_event('REMOVE_FAN', followee, ME, at)
  else log_event('REJECT_FOLLOW_REQUEST', followee, ME, at) end
end
"""

# Whether `member` and the owner of `blocking` / `blocked_by` block each other either way.
_BLOCKED = """
local function blocked(blocking, blocked_by, member)
  return redis.call('ZSCORE', blocking, member) or redis.call('ZSCORE', blocked_by, member)
end
"""

# A follow of a locked account is a request: requests_out of the follower (its source of truth)
# and requests_in of the locked account, at the same time. An explicit time (an import) is never a
# request: the imported graph is taken as it is.
_REQUEST_STEPS = """
-- A follow ends a pending request; most follows have none, so nothing is written then.
local function end_request(requests, member)
  if redis.call('ZSCORE', requests, member) then redis.call('ZREM', requests, member) end
end

local function request_out(requests_out, member, at)
  local added = redis.call('ZADD', requests_out, 'NX', at, member)
  return added, redis.call('ZSCORE', requests_out, member)
end
"""

# The follow rate limit (store/graph/ratelimit.py): an exact moving window, the times of the follower's
# last `amount` follows in a list on the follower's slot, newest first. A follow is refused when the
# oldest of them is still inside the window; it is then not counted, and the reply says when that
# oldest follow leaves the window (epoch ms). `amount` '' means no limit (imports, or the limit off).
_LIMIT = """
local function over_limit(key, amount, window)
  if amount == '' then return false end
  amount, window = tonumber(amount), tonumber(window)
  local now = tonumber(now_ms(nil))
  if redis.call('LLEN', key) >= amount then
    local oldest = tonumber(redis.call('LINDEX', key, amount - 1))
    if oldest + window > now then return string.format('%.0f', oldest + window) end
  end
  redis.call('LPUSH', key, string.format('%.0f', now))
  redis.call('LTRIM', key, 0, amount - 1)
  redis.call('PEXPIRE', key, window)
  return false
end
"""

# The follower's side of a follow, on A's slot (A is known): the limit, blocks either way, then a
# request (B locked, A not following B yet, no explicit time) or the follow. `k` holds following:A
# fans:A mutual:A blocking:A blocked_by:A requests_out:A and the follow limit key of A. Returns as
# FOLLOW does; B's side is the caller's.
_FOLLOWER_SIDE = """
local function follower_side(k, b, at, locked, amount, window)
  local retry = over_limit(k[7], amount, window)
  if retry then return {-4, 0, retry, false, 0} end
  if blocked(k[4], k[5], b) then return {-3, 0, false, false, 0} end
  local back = redis.call('ZSCORE', k[2], b)
  if at == '' and locked and not redis.call('ZSCORE', k[1], b) then
    local added, requested = request_out(k[6], b, now_ms(nil))
    if added == 1 then log_event('FOLLOW_REQUEST', ME, b, requested) end
    return {0, added, requested, back, 1}
  end
  local changed = follow_out(k[1], k[2], k[3], b, now_ms(at))
  end_request(k[6], b)
  local followed = redis.call('ZSCORE', k[1], b)
  if changed == 1 then log_event('FOLLOW', ME, b, followed) end
  return {0, changed, followed, back, 0}
end
"""

# Both steps in one atomic script, on a single Redis.
# KEYS: profile:A profile:B following:A fans:A mutual:A fans:B following:B mutual:B
#       blocking:A blocked_by:A requests_out:A requests_in:B follow limit:A
# ARGV: A B [at] [limit amount] [limit window ms]
# Returns {status, changed, time, B's follow time of A or false, pending}: status -1/-2 = A/B
# unknown, -3 = one blocks the other, -4 = A is over the follow limit (time: when to retry);
# pending 1 when the follow became a request (time: its time).
FOLLOW = (
    NOW
    + LOG
    + FOLLOW_STEPS
    + _BLOCKED
    + _REQUEST_STEPS
    + _LIMIT
    + _FOLLOWER_SIDE
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false, false, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0, false, false, 0} end
local locked = redis.call('HGET', KEYS[2], 'locked') == '1'
local a_side = {KEYS[3], KEYS[4], KEYS[5], KEYS[9], KEYS[10], KEYS[11], KEYS[13]}
local reply = follower_side(a_side, ARGV[2], ARGV[3], locked, ARGV[4], ARGV[5])
if reply[1] == 0 and reply[5] == 1 then
  redis.call('ZADD', KEYS[12], reply[3], ARGV[1])
elseif reply[1] == 0 then
  follow_in(KEYS[6], KEYS[7], KEYS[8], ARGV[1], reply[3])
  end_request(KEYS[12], ARGV[1])
end
return reply
"""
)

# The first step alone, on a cluster (B is known to exist; `locked` was read on B's slot).
# KEYS: profile:A following:A fans:A mutual:A blocking:A blocked_by:A requests_out:A follow limit:A
# ARGV: B [at] locked ('1' / '0') [limit amount] [limit window ms]
# Returns as FOLLOW.
FOLLOW_OUT = (
    NOW
    + LOG
    + FOLLOW_STEPS
    + _BLOCKED
    + _REQUEST_STEPS
    + _LIMIT
    + _FOLLOWER_SIDE
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false, false, 0} end
local a_side = {KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]}
return follower_side(a_side, ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4], ARGV[5])
"""
)

# The second step alone, on a cluster.
# KEYS: fans:B following:B mutual:B requests_in:B blocking:B blocked_by:B profile:B
# ARGV: A, time, pending ('1' / '0')
# Returns 0 when either blocks the other (a block that ran between the steps: the caller undoes the
# first); 2 when a request finds B no longer locked (B unlocked between the steps, and the
# acceptance of B's pending requests may be over): A is B's fan at the request's time, and the
# caller turns A's request into the follow; 1 otherwise.
FOLLOW_IN = (
    FOLLOW_STEPS
    + _BLOCKED
    + _REQUEST_STEPS
    + """
if blocked(KEYS[5], KEYS[6], ARGV[1]) then return 0 end
if ARGV[3] == '1' and redis.call('HGET', KEYS[7], 'locked') == '1' then
  redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
  return 1
end
follow_in(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
end_request(KEYS[4], ARGV[1])
if ARGV[3] == '1' then return 2 end
return 1
"""
)

# Both steps in one atomic script, on a single Redis. An unfollow also withdraws a pending request.
# KEYS: profile:A profile:B following:A mutual:A fans:A fans:B mutual:B requests_out:A requests_in:B
# ARGV: A B, '1' when B removes A as a fan
# Returns {status, changed, B's follow time of A or false}.
UNFOLLOW = (
    NOW
    + LOG
    + _UNFOLLOW_STEP
    + _UNFOLLOW_EVENT
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0, false} end
local followed = unfollow_step(KEYS[3], KEYS[4], ARGV[2])
local changed = followed + redis.call('ZREM', KEYS[8], ARGV[2])
if changed > 0 then log_unfollow(ARGV[2], ARGV[3], followed) end
unfollow_step(KEYS[6], KEYS[7], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
return {0, changed, redis.call('ZSCORE', KEYS[5], ARGV[2])}
"""
)

# The first step alone, on a cluster.
# KEYS: profile:A following:A mutual:A fans:A requests_out:A   ARGV: B, '1' when B removes A as a fan
# Returns {status, changed, B's follow time of A or false}.
UNFOLLOW_OUT = (
    NOW
    + LOG
    + _UNFOLLOW_STEP
    + _UNFOLLOW_EVENT
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local followed = unfollow_step(KEYS[2], KEYS[3], ARGV[1])
local changed = followed + redis.call('ZREM', KEYS[5], ARGV[1])
if changed > 0 then log_unfollow(ARGV[1], ARGV[2], followed) end
return {0, changed, redis.call('ZSCORE', KEYS[4], ARGV[1])}
"""
)

# The second step alone, on a cluster.   KEYS: fans:B mutual:B requests_in:B   ARGV: A
UNFOLLOW_IN = (
    _UNFOLLOW_STEP
    + """
unfollow_step(KEYS[1], KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
"""
)

# KEYS: profile   ARGV: [createdAt] then field, value pairs.
# Returns {created (1/0), name, avatarUrl, createdAt}; the event (USER) holds the profile after it.
UPSERT_USER = (
    NOW
    + LOG
    + """
local fields = {'name', 'avatarUrl', 'createdAt'}
local before = redis.call('HMGET', KEYS[1], unpack(fields))
local created = redis.call('HSETNX', KEYS[1], 'createdAt', now_ms(ARGV[1]))
for i = 2, #ARGV - 2, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local p = redis.call('HMGET', KEYS[1], unpack(fields))
local extra, changed = {}, created == 1
for i, name in ipairs(fields) do
  if p[i] then
    extra[#extra + 1] = name
    extra[#extra + 1] = p[i]
  end
  if p[i] ~= before[i] then changed = true end
end
if changed then log_event('USER', ME, false, now_ms(nil), extra) end
return {created, p[1], p[2], p[3]}
"""
)

# KEYS: fans_seen profile   Returns the mark, epoch ms; -1 when the user is not registered.
MARK_FANS_SEEN = (
    NOW
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

# KEYS: profile keys (of one slot, on a cluster)   Returns name, avatarUrl, createdAt (or false) and
# the settings locked, hideFollowing, hideFans for each, flat. Reads only. One command instead of a
# pipeline of HMGETs: the client's per-command cost dominates here.
PROFILE_FIELDS = ("name", "avatarUrl", "createdAt", "locked", "hideFollowing", "hideFans")
PROFILES = f"""
local out = {{}}
for _, key in ipairs(KEYS) do
  local p = redis.call('HMGET', key, {", ".join(repr(f) for f in PROFILE_FIELDS)})
  for i = 1, {len(PROFILE_FIELDS)} do out[#out + 1] = p[i] end
end
return out
"""

# KEYS: viewer's following, viewer's fans   ARGV: user ids
# Returns {when the viewer followed each (or false), when each followed the viewer (or false)}.
# Both keys are the viewer's, so this is one slot even on a cluster. Reads only.
RELATIONS = """
return {redis.call('ZMSCORE', KEYS[1], unpack(ARGV)), redis.call('ZMSCORE', KEYS[2], unpack(ARGV))}
"""

# KEYS: viewer's blocking, blocked_by, muting, requests_out, requests_in   ARGV: user ids
# Returns a ZMSCORE reply per key: whether the viewer blocks each user, is blocked by them, mutes
# them, asked to follow them, was asked by them. The viewer's keys only: one slot. Reads only.
CONTROLS = """
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('ZMSCORE', key, unpack(ARGV)) end
return out
"""

# KEYS: following, fans, mutual keys of each user in turn (of one slot, on a cluster)
# Returns their ZCARDs, flat. Reads only.
COUNTS = """
local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('ZCARD', key) end
return out
"""

# Whether a user's list is hidden from a viewer who is not its owner: the owner blocks the viewer,
# hides the list, or is locked and the viewer is not a fan. Everything it reads is on the owner's
# slot. KEYS (from k): profile, fans, blocking of the owner. ARGV (from a): viewer ('' when
# anonymous), the profile setting that hides the list: hideFollowing, hideFans, or any other
# value for a list both hide (the mutual list shows members of both).
_HIDDEN = """
local function hidden(k, a)
  if ARGV[a] ~= '' and redis.call('ZSCORE', KEYS[k + 2], ARGV[a]) then return true end
  local s = redis.call('HMGET', KEYS[k], 'locked', 'hideFollowing', 'hideFans')
  local by = ARGV[a + 1]
  if s[2] == '1' and by ~= 'hideFans' then return true end
  if s[3] == '1' and by ~= 'hideFollowing' then return true end
  return s[1] == '1' and (ARGV[a] == '' or not redis.call('ZSCORE', KEYS[k + 1], ARGV[a]))
end
"""

# KEYS: profile, fans, blocking of the owner   ARGV: viewer, setting   Returns 1 when hidden. Reads only.
HIDDEN = (
    _HIDDEN
    + """
if hidden(1, 1) then return 1 end
return 0
"""
)

# A keyset page of a sorted set in newest-first order: score descending, ties by member
# descending (Redis' own ZREVRANGE order). Reads only.
# KEYS: zset [profile, fans, blocking of its owner]
# ARGV: mode ('first' | 'last'), has cursor ('1' | '0'), cursor score, cursor member, limit
#       [viewer, setting]: with the owner's keys, the page of a viewer who is not the owner
# Returns {total, start, end, rows, hidden}: rows are ranks [start, end) as member, score pairs.
PAGE = (
    _HIDDEN
    + """
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
if #KEYS > 1 and hidden(2, 6) then return {total, 0, 0, {}, 1} end
local rows = {}
if stop > start then rows = redis.call('ZREVRANGE', key, start, stop - 1, 'WITHSCORES') end
return {total, start, stop, rows, 0}
"""
)


FOLLOW_SCRIPT = LuaScript(FOLLOW)
FOLLOW_OUT_SCRIPT = LuaScript(FOLLOW_OUT)
FOLLOW_IN_SCRIPT = LuaScript(FOLLOW_IN)
UNFOLLOW_SCRIPT = LuaScript(UNFOLLOW)
UNFOLLOW_OUT_SCRIPT = LuaScript(UNFOLLOW_OUT)
UNFOLLOW_IN_SCRIPT = LuaScript(UNFOLLOW_IN)
UPSERT_USER_SCRIPT = LuaScript(UPSERT_USER)
MARK_FANS_SEEN_SCRIPT = LuaScript(MARK_FANS_SEEN)
NEW_FANS_COUNT_SCRIPT = LuaScript(NEW_FANS_COUNT)
PAGE_SCRIPT = LuaScript(PAGE)
HIDDEN_SCRIPT = LuaScript(HIDDEN)
PROFILES_SCRIPT = LuaScript(PROFILES)
# One profile, as PROFILES reads it: a plain HMGET costs Redis a fraction of a script call.
PROFILE_READ = ReadCommand("HMGET", *PROFILE_FIELDS)
# The profiles of a page's users on a cluster, where they sit in up to 20 slots: an HMGET each (a
# script call per slot would cost Redis several times that). A profile changes rarely, so the read
# channel keeps them until Redis says one changed (store/redis/tracking.py).
PROFILE_READS = KeyedRead(PROFILE_READ, cacheable=True)
RELATIONS_SCRIPT = LuaScript(RELATIONS)
COUNTS_SCRIPT = LuaScript(COUNTS)
CONTROLS_SCRIPT = LuaScript(CONTROLS)
