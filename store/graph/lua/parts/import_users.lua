-- What a batch of follows learns of each user it names, once per user however many follows name
-- them. The keys of any user are built from the layout store/graph/keys.py gives: ARGV[1] is the
-- text before the id, ARGV[2] to ARGV[10] the text after it of each key below.
local HEAD = ARGV[1]
local PROFILE, ACCOUNT, FOLLOWING, FANS, MUTUAL = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local BLOCKING, BLOCKED_BY, REQUESTS_OUT, REQUESTS_IN = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local function key(user, tail) return HEAD .. user .. tail end
-- A follow of a batch as the scripts get them, a line each in one string: follower, followee, time
-- ('' for now).
local FOLLOW_LINE = '([^ ]+) ([^ ]+) ([^\n]*)\n'

-- One time for everything the batch writes without a time of its own.
local stamp_ms
local function stamp()
  stamp_ms = stamp_ms or now_ms(nil)
  return stamp_ms
end

-- A user is KNOWN (registered before), NEW (registered by this batch: no block, mute, request or
-- follow can name them yet) or UNKNOWN (not registered, or an account that is off:
-- store/graph/lifecycle.py). A call of a command costs a script far more than the command's own
-- work, so one EXISTS tells all the batch needs of a user: each key is named as many times as its
-- weight, and the count is 10 x profile + 5 x following + the number of sets of blocks and
-- requests the user has + 1 for the hash of an account that is off. That hash is the profile
-- renamed, so it never stands beside one: a count of 10 or more tells a registered user and their
-- blocks and requests, a count of 0 a user never seen (registered at once), and only a count in
-- between needs a look at the account alone.
local KNOWN, NEW, UNKNOWN = 1, 2, 0
local state, controlled, follows_some, locked = {}, {}, {}, {}
local registered, learnt = {}, {}
-- Users learnt by this call that were never seen, and the others: while most were never seen (an
-- import into an empty graph), a user is first looked up with each key once, seven names where the
-- count of the weighted lookup takes twenty, and only one seen before is looked up again weighted.
local unseen, seen = 0, 0

local function learn(user, register)
  local head = HEAD .. user
  local p, f, a = head .. PROFILE, head .. FOLLOWING, head .. ACCOUNT
  local bl, bb, ro, ri = head .. BLOCKING, head .. BLOCKED_BY, head .. REQUESTS_OUT, head .. REQUESTS_IN
  local n = 1
  if unseen >= seen then n = redis.call('EXISTS', p, f, bl, bb, ro, ri, a) end
  if n > 0 then
    n = redis.call('EXISTS', p, p, p, p, p, p, p, p, p, p, f, f, f, f, f, bl, bb, ro, ri, a)
  end
  if n == 0 then unseen = unseen + 1 else seen = seen + 1 end
  local s
  if n >= 10 then
    s = KNOWN
  elseif register and (n == 0 or redis.call('EXISTS', key(user, ACCOUNT)) == 0) then
    redis.call('HSET', p, 'createdAt', stamp())
    registered[#registered + 1] = user
    s, n = NEW, 0
  else
    s = UNKNOWN
  end
  state[user] = s
  learnt[#learnt + 1] = user
  controlled[user] = n % 5 > 0
  follows_some[user] = n % 10 >= 5
  return s
end

local function user_state(user, register)
  return state[user] or learn(user, register)
end

-- Whether a user has a block either way or a pending request either way: most have none, and
-- their follows then skip those checks. (A cluster's steps after the first ask only this of a
-- user: four keys, not the twenty of `learn`.)
local function has_controls(user)
  local c = controlled[user]
  if c == nil then
    c = redis.call('EXISTS', key(user, BLOCKING), key(user, BLOCKED_BY), key(user, REQUESTS_OUT),
      key(user, REQUESTS_IN)) > 0
    controlled[user] = c
  end
  return c
end

local function is_locked(user)
  local l = locked[user]
  if l == nil then
    l = redis.call('HGET', key(user, PROFILE), 'locked') == '1'
    locked[user] = l
  end
  return l
end

-- What a batch learnt of a user, as one letter an importer may keep for later batches of the same
-- import (store/graph/imports.py KnownUsers): 'u' unknown, '1' registered with blocks or requests,
-- '0' registered without, 'n' registered by this batch (and so following no one but whom the
-- batch's follows name). Whether a user registered before follows anyone is not kept: a
-- reactivation gives follows back in steps that log nothing (parts/lifecycle.lua attach), so a
-- follow of such a user known by letter is always checked for a follow back.
local function letter_of(user)
  local s = state[user]
  if s == UNKNOWN then return 'u' end
  if controlled[user] then return '1' end
  return s == NEW and 'n' or '0'
end
