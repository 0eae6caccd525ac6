-- KEYS: the log
-- ARGV: the key layout (10 values: parts/import_users), register ('1' / '0'), stop ('1' / '0'),
--       the id of the log's
--       last event when the importer learnt what it tells ('' for nothing), the users it tells of
--       (space-separated) and their letters (parts/import_users told), one each; the follows, a
--       'follower followee time' line each (time '' for now), in one string; then ME and the cap
--       (LOG)
-- Returns {a letter a follow (1 added, 0 there already, r a request made, b blocked, f / F the
-- follower / followee unknown), users registered, the log's last event id before the batch and
-- after it, the users the batch learnt or changed the letter of (space-separated) and their
-- letters at its end}.
--
-- What the importer tells is believed only when the log's last event is still the one it names:
-- every write that changes what a batch is told of a user (a registration, a block, a request, an
-- account turned off or on) logs an event in the same call, so nothing changed since.
local register, stop = ARGV[11] == '1', ARGV[12] == '1'
local known_at = ARGV[13]
local last = redis.call('XREVRANGE', KEYS[#KEYS], '+', '-', 'COUNT', 1)[1]
local before = last and last[1] or ''
local given = {}
if known_at ~= '' and known_at == before then
  local letters, j = ARGV[15], 0
  for user in string.gmatch(ARGV[14], '%S+') do
    j = j + 1
    local letter = string.sub(letters, j, j)
    told(user, letter)
    given[user] = letter
  end
end
local codes, follows, ended = {}, {}, {}
-- Each followee's new fans (fans[b][a]: the time of a's follow of b), written with one ZADD after
-- the loop, and read before it for a follow back: the follows' own order only matters to the
-- following sets, which the loop writes (and reads) as it goes.
local fans, followees = {}, {}

local function fan(a, b, t)
  local of_b = fans[b]
  if not of_b then
    of_b = {}
    fans[b] = of_b
    followees[#followees + 1] = b
  end
  of_b[a] = t
end

-- Mutual when b follows a too, since the later of the two follows.
local function mutual(a, b, t, back)
  local when = string.format('%.0f', math.max(tonumber(back), tonumber(t)))
  redis.call('ZADD', key(a, MUTUAL), when, b)
  redis.call('ZADD', key(b, MUTUAL), when, a)
end

-- The follows, three values each; ids never hold a space or a line break.
local E = {}
for a, b, at in string.gmatch(ARGV[16], '([^ ]+) ([^ ]+) ([^\n]*)\n') do
  E[#E + 1] = a
  E[#E + 1] = b
  E[#E + 1] = at
end

-- The follow at E[i], on its own.
local function one(i)
  local a, b, at = E[i], E[i + 1], E[i + 2]
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
  local t, code = at ~= '' and at or stamp(), '1'
  if redis.call('ZADD', following, 'NX', t, b) == 1 then
    follows[#follows + 1] = a .. ' ' .. b .. ' ' .. t
    follows_some[a] = true
  else
    code = '0'
    t = redis.call('ZSCORE', following, b)
  end
  if follows_some[b] then
    local back = redis.call('ZSCORE', key(b, FOLLOWING), a)
    if back then mutual(a, b, t, back) end
  end
  fan(a, b, t)
  if controlled[a] and redis.call('ZREM', key(a, REQUESTS_OUT), b) == 1 then
    ended[#ended + 1] = a .. ' ' .. b
  end
  if controlled[b] then redis.call('ZREM', key(b, REQUESTS_IN), a) end
  return code
end

-- The follows at E[i], E[i + 3], ... E[j], all by one follower (registered, with no blocks or
-- requests), each with its time and to a different user: a few commands for them all rather
-- than a few each (a file sorted by follower). Their codes go to `out`.
local function run(i, j, out)
  local a = E[i]
  local to, at = {}, {}
  for k = i, j, 3 do
    local b = E[k + 1]
    if user_state(b, register) ~= UNKNOWN then
      to[#to + 1] = b
      at[#at + 1] = E[k + 2]
    end
  end
  local following = key(a, FOLLOWING)
  local had, back = {}, {}
  if #to > 0 then
    had = redis.call('ZMSCORE', following, unpack(to))
    back = redis.call('ZMSCORE', key(a, FANS), unpack(to))
  end
  local new = {}
  for m, b in ipairs(to) do
    if had[m] then
      at[m] = had[m]
    else
      new[#new + 1] = at[m]
      new[#new + 1] = b
      follows[#follows + 1] = a .. ' ' .. b .. ' ' .. at[m]
    end
  end
  if #new > 0 then
    redis.call('ZADD', following, unpack(new))
    follows_some[a] = true
  end
  -- Who follows a back: a's fans set, and the follows of a this batch made, written after the loop.
  local pending = fans[a]
  for m, b in ipairs(to) do
    local t = at[m]
    local b_back = back[m] or (pending and pending[b])
    if b_back then mutual(a, b, t, b_back) end
    fan(a, b, t)
    if controlled[b] then redis.call('ZREM', key(b, REQUESTS_IN), a) end
  end
  local n = 1
  for k = i, j, 3 do
    local b = E[k + 1]
    if state[b] == UNKNOWN then
      out[#out + 1] = 'F'
    else
      out[#out + 1] = had[n] and '0' or '1'
      n = n + 1
    end
  end
end

local i, last = 1, #E - 2
while i <= last do
  local a, j = E[i], i
  if not stop and user_state(a, register) ~= UNKNOWN and not controlled[a] then
    -- The follows by a that come next, each with its time, to users not named yet in them.
    local seen = {}
    while j <= last and E[j] == a and E[j + 2] ~= '' and not seen[E[j + 1]] do
      seen[E[j + 1]] = true
      j = j + 3
    end
    j = j - 3
  end
  if j > i then
    run(i, j, codes)
  else
    j = i
    local code = one(i)
    codes[#codes + 1] = code
    if stop and code ~= '1' and code ~= '0' and code ~= 'r' then break end
  end
  i = j + 3
end
for _, b in ipairs(followees) do
  local list, fans_key = {}, key(b, FANS)
  for a, t in pairs(fans[b]) do
    list[#list + 1] = t
    list[#list + 1] = a
  end
  for j = 1, #list, 1000 do redis.call('ZADD', fans_key, unpack(list, j, math.min(j + 999, #list))) end
end
local after = import_event(KEYS[#KEYS], registered, follows, ended) or before
local letters = {}
for j, user in ipairs(learnt) do letters[j] = letter_of(user) end
for user, letter in pairs(given) do
  local now = letter_of(user)
  if now ~= letter then
    learnt[#learnt + 1] = user
    letters[#letters + 1] = now
  end
end
return {table.concat(codes), #registered, before, after, table.concat(learnt, ' '), table.concat(letters)}
