-- KEYS: the log
-- ARGV: the key layout (10 values: parts/import_users), register ('1' / '0'), stop ('1' / '0'),
--       the id of the log's last event when the importer learnt what it knows of its users ('' when
--       it has no such id, '*' when it knows no user), the users its plain follows name that it
--       does not know (space-separated), the plain follows, then the others, each a 'follower
--       followee time' line (time '' for now) in one string, a letter for each plain follow ('0'
--       when the importer knows the followee does not follow the follower: parts/import_follow
--       add's `back`; '2' when it does not know the followee and sent no follow back; '' for
--       none), the import's run id ('' for none), whether the users it does not know were never
--       seen ('?' it has had no answer yet: so when the database holds no key at all; '1' it
--       vouches that the import began on an empty database and nothing else wrote since: so when
--       what it knows is believed; '' no), then ME and the cap (LOG)
-- Returns {a letter for each of the others (1 added, 0 there already, r a request made, b
-- blocked, f / F the follower / followee unknown), a letter for each plain follow, users
-- registered, the log's last event id before the batch and after it, the users the batch learnt
-- (space-separated) and their letters at its end (parts/import_users letter_of), '1' when it found
-- the database empty ('?') or ''}.
--
-- A plain follow has a time, users the importer knows as registered without blocks or requests
-- (letter '0') or does not know yet, and no follow of the batch without a time names them: once its
-- users are learnt, it needs no rule but the follow back, and takes the loop below that has no
-- other. What the importer knows is believed only when the log's last event is still the one it
-- names: every write that could change a letter (a registration, a block, a request, an account
-- turned off or on) logs an event in the same call, so nothing changed since. Otherwise the plain
-- follows go as the others do. An importer may send a batch before it has read the answer to the
-- one before: the log's last event is then that batch's, which names the import's run and the
-- event that was last before it, and what the importer knows is believed when that is the one it
-- names and came right before (nothing was logged while that batch ran). The users that batch
-- registered are learnt from its event.
--
-- A plain follow is checked for a follow back unless the followee is known to follow nobody: one
-- this batch learnt (and registered, most often) who has followed nobody since, or one the
-- importer registered and has sent every follow of since, none of them back (its letter '0', or
-- '2' for one the batch before registered, or this one). A follow by a user the importer
-- registered comes from the importer or logs an event (and then nothing it knows is believed):
-- nothing else gives a new user follows.
local register, stop = ARGV[11] == '1', ARGV[12] == '1'
local RUN = ARGV[18]
local tail = redis.call('XREVRANGE', KEYS[#KEYS], '+', '-', 'COUNT', 2)
local last = tail[1]
local before = last and last[1] or ''

-- The event of this run's batch when it is the log's last and nothing was logged between that
-- batch's start and it: the id of the event last before that batch (its chain fields come right
-- after k, a and at: parts/import_event.lua), or nil.
local ours
do
  local f = last and last[2]
  if RUN ~= '' and f ~= nil and f[7] == 'run' and f[8] == RUN and f[9] == 'before' then
    local previous = tail[2] and tail[2][1] or ''
    if previous == f[10] then ours = f[10] end
  end
end

-- '*': the importer knows no user yet, and relies on nothing.
local known_at = ARGV[13]
local trusted = known_at == '*' or known_at ~= '' and (known_at == before or known_at == ours)

-- The users that batch registered: nothing else has happened to them since, so they are
-- registered, with no blocks or requests, and follow only whom the import sent (an importer that
-- sent this batch before reading that one's answer does not know them yet). Learnt here from the
-- event, without a lookup; their letters are that batch's answer.
local pending = {}
if ours then
  local f = last[2]
  for j = 11, #f, 2 do
    if f[j] == 'users' then
      for user in string.gmatch(f[j + 1], '%S+') do
        pending[user] = true
        state[user], controlled[user], follows_some[user] = KNOWN, false, true
      end
    end
  end
end
local PLAIN, OTHERS, NO_BACK = ARGV[15], ARGV[16], ARGV[17]
local follows, ended = {}, {}

-- A follow with every rule, as follow() makes it.
local function one(a, b, at)
  local sa, sb = user_state(a, register), user_state(b, register)
  if sa == UNKNOWN then return 'f' end
  if sb == UNKNOWN then return 'F' end
  local following = key(a, FOLLOWING)
  if controlled[a] and blocked(key(a, BLOCKING), key(a, BLOCKED_BY), b) then return 'b' end
  if at == '' and is_locked(b) and not redis.call('ZSCORE', following, b) then
    -- As follow() does: a follow of a locked account without a time is a request.
    local added, requested = request_out(key(a, REQUESTS_OUT), b, stamp())
    redis.call('ZADD', key(b, REQUESTS_IN), requested, a)
    if added == 1 then log_event('FOLLOW_REQUEST', a, b, requested) end
    controlled[a], controlled[b] = true, true
    return added == 1 and 'r' or '0'
  end
  local added, t = add(a, b, at ~= '' and at or stamp(), follows_some[b])
  if added then
    follows[#follows + 1] = a .. ' ' .. b .. ' ' .. t
    follows_some[a] = true
  end
  if controlled[a] and redis.call('ZREM', key(a, REQUESTS_OUT), b) == 1 then
    ended[#ended + 1] = a .. ' ' .. b
  end
  if controlled[b] then redis.call('ZREM', key(b, REQUESTS_IN), a) end
  return added and '1' or '0'
end

local LINE = '()([^ ]+) ([^ ]+) ([^\n]*)()\n'

-- Each follow of `lines` with every rule, its letter added to `codes`; with `stop`, up to the first
-- refused one.
local function each(lines, codes)
  for _, a, b, at in string.gmatch(lines, LINE) do
    local code = one(a, b, at)
    codes[#codes + 1] = code
    if stop and code ~= '1' and code ~= '0' and code ~= 'r' then return end
  end
end

local others, plain = {}, {}
-- The users the importer does not know: learnt (and registered) first; those unknown, off, or with
-- blocks or requests take their plain follows with every rule. Into a database that held nothing
-- when the import began, and where nothing else wrote since, a user the import has not named yet
-- was never seen (those the batch before registered are learnt above): registered without a look.
local odd = {}
local found_empty = ARGV[19] == '?' and redis.call('DBSIZE') == 0
if register and trusted and (found_empty or ARGV[19] == '1') then
  local now = stamp()
  for user in string.gmatch(ARGV[14], '%S+') do
    if state[user] == nil then
      redis.call('HSET', HEAD .. user .. PROFILE, 'createdAt', now)
      registered[#registered + 1] = user
      learnt[#learnt + 1] = user
      state[user], controlled[user], follows_some[user] = NEW, false, false
    end
  end
else
  for user in string.gmatch(ARGV[14], '%S+') do
    if user_state(user, register) == UNKNOWN or controlled[user] then odd[user] = true end
  end
end
each(OTHERS, others)
if not trusted then
  each(PLAIN, plain)
else
  -- The plain follows added go to the event as PLAIN has them: a piece of its text for each
  -- stretch of lines added here.
  local from = 1
  local function cut(s, e)
    if s > from then follows[#follows + 1] = string.sub(PLAIN, from, s - 2) end
    from = e + 1
  end
  -- Most plain follows are added ('1'): only the other letters are kept, by the follow's place.
  local byte, i, other = string.byte, 0, {}
  for s, a, b, t, e in string.gmatch(PLAIN, LINE) do
    i = i + 1
    if odd[a] or odd[b] then
      cut(s, e)
      other[i] = one(a, b, t)
    else
      -- follows_some: nil for a user the importer knew, false for one this batch learnt following
      -- nobody yet. NO_BACK's letter: '1' look, '0' the importer knows b registered by it and the
      -- follow back not sent, '2' it does not know b and has not sent the follow back (no look
      -- when b is registered by this batch or the one before).
      local back = follows_some[b] ~= false
      if back then
        local l = byte(NO_BACK, i)
        back = l ~= 48 and (l ~= 50 or state[b] == KNOWN and not pending[b])
      end
      -- include: parts/plain_follow
      if not added then
        other[i] = '0'
        cut(s, e)
      end
      if follows_some[a] == false then follows_some[a] = true end
    end
  end
  if from <= #PLAIN then follows[#follows + 1] = string.sub(PLAIN, from, #PLAIN - 1) end
  if next(other) == nil then
    plain = {string.rep('1', i)}
  else
    for j = 1, i do plain[j] = other[j] or '1' end
  end
end
write_fans(function(b) return key(b, FANS) end)
local chain = RUN ~= '' and {'run', RUN, 'before', before} or nil
local after = import_event(KEYS[#KEYS], registered, follows, ended, chain) or before
local letters = {}
for j, user in ipairs(learnt) do letters[j] = letter_of(user) end
return {table.concat(others), table.concat(plain), #registered, before, after, table.concat(learnt, ' '),
  table.concat(letters), found_empty and '1' or ''}
