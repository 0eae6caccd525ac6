"""Lua sources of blocks, mutes, follow requests and settings (see store/graph/scripts.py for the rules:
idempotent steps over one user's keys; both steps in one script on a single Redis, each alone on
its own user's slot on a cluster)."""

from __future__ import annotations

from followgraph.store.graph.scripts import FOLLOW_STEPS, LOG, NOW
from followgraph.store.redis.lua import LuaScript

# A block ends everything between the two users on one side: follows both ways, the mutual entry,
# and requests both ways.
_CUT = """
local function cut(following, fans, mutual, requests_in, requests_out, member)
  redis.call('ZREM', following, member)
  redis.call('ZREM', fans, member)
  redis.call('ZREM', mutual, member)
  redis.call('ZREM', requests_in, member)
  redis.call('ZREM', requests_out, member)
end
"""


def _block(prefix: str, at: str) -> tuple[str, str]:
    """block(A, B) on a single Redis and A's step of it on a cluster, the block's time being the
    Lua expression `at` (B's step is BLOCK_IN either way)."""
    single = (
        prefix
        + LOG
        + _CUT
        + f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return {{-1, 0}} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {{-2, 0}} end
local added = redis.call('ZADD', KEYS[3], 'NX', {at.format(arg=3)}, ARGV[2])
local at = redis.call('ZSCORE', KEYS[3], ARGV[2])
if added == 1 then log_event('BLOCK', ME, ARGV[2], at) end
cut(KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], ARGV[2])
redis.call('ZADD', KEYS[9], at, ARGV[1])
cut(KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], ARGV[1])
return {{0, added}}
"""
    )
    out = (
        prefix
        + LOG
        + _CUT
        + f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return {{-1, 0, false}} end
local added = redis.call('ZADD', KEYS[2], 'NX', {at.format(arg=2)}, ARGV[1])
cut(KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[1])
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if added == 1 then log_event('BLOCK', ME, ARGV[1], at) end
return {{0, added, at}}
"""
    )
    return single, out


# block(A, B) on a single Redis.
# KEYS: profile:A profile:B blocking:A following:A fans:A mutual:A requests_in:A requests_out:A
#       blocked_by:B following:B fans:B mutual:B requests_in:B requests_out:B
# ARGV: A B   Returns {status, added}.
# A's step of a block, on a cluster (BLOCK_OUT).
# KEYS: profile:A blocking:A following:A fans:A mutual:A requests_in:A requests_out:A   ARGV: B
# Returns {status, added, time}.
BLOCK, BLOCK_OUT = _block(NOW, "now_ms(nil)")

# B's step of a block, on a cluster.
# KEYS: blocked_by:B following:B fans:B mutual:B requests_in:B requests_out:B   ARGV: A, time
BLOCK_IN = (
    _CUT
    + """
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
cut(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1])
return 1
"""
)


def _removal(event: str) -> tuple[str, str, str]:
    """An undone relation that A's set holds and B's set mirrors (a block, a request to A): the
    script on a single Redis, A's step and B's step on a cluster, logging `event` when A's entry
    was there.
    Single: KEYS profile:A profile:B A's set B's set, ARGV A B. A's step: KEYS profile:A A's set,
    ARGV B. Both return {status, changed}. B's step: KEYS B's set, ARGV A."""
    single = (
        NOW
        + LOG
        + f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return {{-1, 0}} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {{-2, 0}} end
local changed = redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[1])
if changed == 1 then log_event('{event}', ME, ARGV[2], now_ms(nil)) end
return {{0, changed}}
"""
    )
    out = (
        NOW
        + LOG
        + f"""
if redis.call('EXISTS', KEYS[1]) == 0 then return {{-1, 0}} end
local changed = redis.call('ZREM', KEYS[2], ARGV[1])
if changed == 1 then log_event('{event}', ME, ARGV[1], now_ms(nil)) end
return {{0, changed}}
"""
    )
    into = """
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
"""
    return single, out, into


# unblock(A, B): KEYS profile:A profile:B blocking:A blocked_by:B (A's step: profile:A blocking:A;
# B's: blocked_by:B). Follows the block ended stay ended.
UNBLOCK, UNBLOCK_OUT, UNBLOCK_IN = _removal("UNBLOCK")

# mute / unmute: A's keys only (B's registration is checked apart on a cluster).
# KEYS: profile:A muting:A [profile:B]   ARGV: B, '1' to mute / '0' to unmute
# Returns {status, changed}.
MUTE = (
    NOW
    + LOG
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if #KEYS == 4 and redis.call('EXISTS', KEYS[3]) == 0 then return {-2, 0} end
local at = now_ms(nil)
if ARGV[2] == '1' then
  local added = redis.call('ZADD', KEYS[2], 'NX', at, ARGV[1])
  if added == 1 then log_event('MUTE', ME, ARGV[1], at) end
  return {0, added}
end
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
if removed == 1 then log_event('UNMUTE', ME, ARGV[1], at) end
return {0, removed}
"""
)

# The owner's side of accepting B's request (A's slot): B becomes A's fan at `now`. A retry after
# the owner's step finds B among the fans and returns that time, so the requester's step completes.
# The requester's side (B's slot) follows only while B's request is still there, its source of
# truth: a withdrawal (or a block) that ran between the two steps wins, and its own second step
# removes the fan entry the owner's step wrote. Following regardless would leave B following A
# without being A's fan.
_ACCEPT_STEPS = (
    FOLLOW_STEPS
    + """
local function accept_owner(requests_in, fans, following, mutual, member, at)
  if redis.call('ZREM', requests_in, member) == 1 then
    follow_in(fans, following, mutual, member, at)
    return 1, at
  end
  return 0, redis.call('ZSCORE', fans, member)
end

-- Returns 1 when the requester now follows (the step that logs the acceptance).
local function accept_requester(requests_out, following, fans, mutual, member, at)
  if redis.call('ZREM', requests_out, member) == 1 and at then
    follow_out(following, fans, mutual, member, at)
    return 1
  end
  return 0
end
"""
)

# accept(A accepts B) on a single Redis.
# KEYS: profile:A profile:B requests_in:A fans:A following:A mutual:A
#       requests_out:B following:B fans:B mutual:B
# ARGV: A B   Returns {status, changed}.
ACCEPT = (
    NOW
    + LOG
    + _ACCEPT_STEPS
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0} end
-- Without B's side of the request (a stale entry of A's) there is nothing to accept.
if not redis.call('ZSCORE', KEYS[7], ARGV[1]) then
  redis.call('ZREM', KEYS[3], ARGV[2])
  return {0, 0}
end
local changed, at = accept_owner(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[2], now_ms(nil))
if accept_requester(KEYS[7], KEYS[8], KEYS[9], KEYS[10], ARGV[1], at) == 1 then
  log_event('ACCEPT_FOLLOW_REQUEST', ARGV[1], ARGV[2], at)
end
return {0, changed}
"""
)

# The owner's step, on a cluster.   KEYS: profile:A requests_in:A fans:A following:A mutual:A
# ARGV: B   Returns {status, changed, B's follow time or false}.
ACCEPT_OUT = (
    NOW
    + _ACCEPT_STEPS
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local changed, at = accept_owner(KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], now_ms(nil))
return {0, changed, at}
"""
)

# The requester's step (on a cluster, and after ACCEPT_OLDEST); it logs the acceptance, as the
# follow is written here, on the requester's slot.   KEYS: requests_out:B following:B fans:B mutual:B
# ARGV: A, follow time ('' when there is none: the request is only dropped); ME is B.
ACCEPT_IN = (
    LOG
    + _ACCEPT_STEPS
    + """
local at = ARGV[2]
if at == '' then at = false end
if accept_requester(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], at) == 1 then
  log_event('ACCEPT_FOLLOW_REQUEST', ARGV[1], ME, at)
end
return 1
"""
)

# The requesters' steps of a batch after ACCEPT_OLDEST in one call, on a single Redis (where every
# key is on the one server): ACCEPT_IN for each.
# KEYS: requests_out:B following:B fans:B mutual:B of each requester B in turn
# ARGV: A, follow time, then each B. Returns how many now follow.
ACCEPT_IN_MANY = (
    LOG
    + _ACCEPT_STEPS
    + """
local followed = 0
for i = 3, #ARGV - 2 do
  local k = (i - 3) * 4
  if accept_requester(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], ARGV[1], ARGV[2]) == 1 then
    log_event('ACCEPT_FOLLOW_REQUEST', ARGV[1], ARGV[i], ARGV[2])
    followed = followed + 1
  end
end
return followed
"""
)

# Up to ARGV[1] of A's oldest pending requests accepted at once, while A is unlocked (a lock
# that comes back stops it). KEYS: profile:A requests_in:A fans:A following:A mutual:A
# Returns {requester, time, requester, time, ...}; each requester's own step follows (ACCEPT_IN).
ACCEPT_OLDEST = (
    NOW
    + _ACCEPT_STEPS
    + """
if redis.call('HGET', KEYS[1], 'locked') == '1' then return {} end
local out = {}
local at = now_ms(nil)
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)) do
  accept_owner(KEYS[2], KEYS[3], KEYS[4], KEYS[5], member, at)
  out[#out + 1] = member
  out[#out + 1] = at
end
return out
"""
)

# reject(A rejects B): KEYS profile:A profile:B requests_in:A requests_out:B (the owner's step:
# profile:A requests_in:A; the requester's: requests_out:B).
REJECT, REJECT_OUT, REJECT_IN = _removal("REJECT_FOLLOW_REQUEST")

# KEYS: profile   ARGV: locked, hideFollowing, hideFans: '1' on, '0' off, '' unchanged
# Returns {locked before, locked, hideFollowing, hideFans} ('1' or false), or -1 for an unknown user.
UPDATE_SETTINGS = (
    NOW
    + LOG
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local names = {'locked', 'hideFollowing', 'hideFans'}
local was = redis.call('HMGET', KEYS[1], unpack(names))
for i, name in ipairs(names) do
  if ARGV[i] == '1' then redis.call('HSET', KEYS[1], name, '1') end
  if ARGV[i] == '0' then redis.call('HDEL', KEYS[1], name) end
end
local now = redis.call('HMGET', KEYS[1], unpack(names))
local extra, changed = {}, false
for i, name in ipairs(names) do
  extra[#extra + 1] = name
  extra[#extra + 1] = now[i] and '1' or '0'
  if now[i] ~= was[i] then changed = true end
end
if changed then log_event('SETTINGS', ME, false, now_ms(nil), extra) end
return {was[1], now[1], now[2], now[3]}
"""
)

# -- imports: the same changes at a given time (epoch ms), idempotent, a batch to a pipeline ------

# block(A, B) at a given time (an existing block keeps its time): KEYS as BLOCK and BLOCK_OUT,
# ARGV as theirs followed by the time; B's step is BLOCK_IN.
BLOCK_AT, BLOCK_AT_OUT = _block("", "ARGV[{arg}]")

# mute(A, B) at a given time: A's keys only (B's registration is checked apart on a cluster).
# KEYS: profile:A muting:A [profile:B]   ARGV: B time   Returns {status, added}.
MUTE_AT = (
    LOG
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if #KEYS == 4 and redis.call('EXISTS', KEYS[3]) == 0 then return {-2, 0} end
local added = redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
if added == 1 then log_event('MUTE', ME, ARGV[1], ARGV[2]) end
return {0, added}
"""
)

# A's pending request to follow B, at a given time; refused (-3) when either blocks the other and
# (-4) when A already follows B. Whether B is locked is not asked: the imported graph is taken as
# it is.
_REQUEST_AT_OUT = """
local function request_at_out(blocking, blocked_by, following, requests_out, member, at)
  if redis.call('ZSCORE', blocking, member) or redis.call('ZSCORE', blocked_by, member) then
    return -3, 0, false
  end
  if redis.call('ZSCORE', following, member) then return -4, 0, false end
  local added = redis.call('ZADD', requests_out, 'NX', at, member)
  return 0, added, redis.call('ZSCORE', requests_out, member)
end
"""

# On a single Redis.
# KEYS: profile:A profile:B blocking:A blocked_by:A following:A requests_out:A requests_in:B
# ARGV: A B time   Returns {status, added}.
REQUEST_AT = (
    LOG
    + _REQUEST_AT_OUT
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0} end
local status, added, at = request_at_out(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[2], ARGV[3])
if status == 0 then redis.call('ZADD', KEYS[7], at, ARGV[1]) end
if added == 1 then log_event('FOLLOW_REQUEST', ME, ARGV[2], at) end
return {status, added}
"""
)

# A's step, on a cluster.   KEYS: profile:A blocking:A blocked_by:A following:A requests_out:A
# ARGV: B time   Returns {status, added, time}.
REQUEST_AT_OUT = (
    LOG
    + _REQUEST_AT_OUT
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local status, added, at = request_at_out(KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2])
if added == 1 then log_event('FOLLOW_REQUEST', ME, ARGV[1], at) end
return {status, added, at}
"""
)

# B's step, on a cluster.   KEYS: requests_in:B blocking:B blocked_by:B   ARGV: A, time
# Returns 0 when either blocks the other (a block that ran between the steps: the caller drops A's
# request with REJECT_IN), 1 otherwise.
REQUEST_AT_IN = """
if redis.call('ZSCORE', KEYS[2], ARGV[1]) or redis.call('ZSCORE', KEYS[3], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
"""

BLOCK_SCRIPT = LuaScript(BLOCK)
BLOCK_OUT_SCRIPT = LuaScript(BLOCK_OUT)
BLOCK_IN_SCRIPT = LuaScript(BLOCK_IN)
UNBLOCK_SCRIPT = LuaScript(UNBLOCK)
UNBLOCK_OUT_SCRIPT = LuaScript(UNBLOCK_OUT)
UNBLOCK_IN_SCRIPT = LuaScript(UNBLOCK_IN)
MUTE_SCRIPT = LuaScript(MUTE)
ACCEPT_SCRIPT = LuaScript(ACCEPT)
ACCEPT_OUT_SCRIPT = LuaScript(ACCEPT_OUT)
ACCEPT_IN_SCRIPT = LuaScript(ACCEPT_IN)
ACCEPT_IN_MANY_SCRIPT = LuaScript(ACCEPT_IN_MANY)
ACCEPT_OLDEST_SCRIPT = LuaScript(ACCEPT_OLDEST)
REJECT_SCRIPT = LuaScript(REJECT)
REJECT_OUT_SCRIPT = LuaScript(REJECT_OUT)
REJECT_IN_SCRIPT = LuaScript(REJECT_IN)
UPDATE_SETTINGS_SCRIPT = LuaScript(UPDATE_SETTINGS)
BLOCK_AT_SCRIPT = LuaScript(BLOCK_AT)
BLOCK_AT_OUT_SCRIPT = LuaScript(BLOCK_AT_OUT)
MUTE_AT_SCRIPT = LuaScript(MUTE_AT)
REQUEST_AT_SCRIPT = LuaScript(REQUEST_AT)
REQUEST_AT_OUT_SCRIPT = LuaScript(REQUEST_AT_OUT)
REQUEST_AT_IN_SCRIPT = LuaScript(REQUEST_AT_IN)
