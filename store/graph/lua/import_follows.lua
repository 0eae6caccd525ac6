-- KEYS: [the import's checkpoint hash,] the log
-- ARGV: the key layout (10 values: parts/import_users), register ('1' / '0'), stop ('1' / '0'),
--       the number of checkpoint values, those values (field, value pairs); the id of the log's
--       last event when the importer learnt what it tells ('' for nothing), the number of users
--       it tells of and a user, letter pair each (parts/import_users told); then follower,
--       followee, time ('' for now) of each follow; then ME and the cap (LOG)
-- Returns {a letter a follow (1 added, 0 there already, r a request made, b blocked, f / F the
-- follower / followee unknown), users registered, the log's last event id before the batch and
-- after it, the users the batch learnt or changed the letter of (space-separated) and their
-- letters at its end}.
--
-- What the importer tells is believed only when the log's last event is still the one it names:
-- every write that changes what a batch learns of a user (a registration, a block, a request, an
-- account turned off, a follow) logs an event in the same call, so nothing changed since.
local register, stop = ARGV[11] == '1', ARGV[12] == '1'
local marks = tonumber(ARGV[13])
local known_at, told_count = ARGV[14 + marks], tonumber(ARGV[15 + marks])
local last = redis.call('XREVRANGE', KEYS[#KEYS], '+', '-', 'COUNT', 1)[1]
local before = last and last[1] or ''
local given = {}
if known_at ~= '' and known_at == before then
  for j = 16 + marks, 15 + marks + 2 * told_count, 2 do
    told(ARGV[j], ARGV[j + 1])
    given[ARGV[j]] = ARGV[j + 1]
  end
end
local codes, follows, ended = {}, {}, {}
-- Each followee's new fans, written with one ZADD after the loop: the follows' own order only
-- matters to the following sets, which the loop writes (and reads) as it goes.
local fans, followees = {}, {}
local stopped = false
for i = 16 + marks + 2 * told_count, #ARGV - 4, 3 do
  local a, b, at = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local sa, sb = user_state(a, register), user_state(b, register)
  local code
  if sa == UNKNOWN then
    code = 'f'
  elseif sb == UNKNOWN then
    code = 'F'
  else
    local following = key(a, FOLLOWING)
    if controlled[a] and blocked(key(a, BLOCKING), key(a, BLOCKED_BY), b) then
      code = 'b'
    elseif at == '' and is_locked(b) and not redis.call('ZSCORE', following, b) then
      -- As follow() does: a follow of a locked account without a time is a request.
      local added, requested = request_out(key(a, REQUESTS_OUT), b, stamp())
      redis.call('ZADD', key(b, REQUESTS_IN), requested, a)
      if added == 1 then log_event('FOLLOW_REQUEST', a, b, requested) end
      controlled[a], controlled[b] = true, true
      code = added == 1 and 'r' or '0'
    else
      local t = at ~= '' and at or stamp()
      if redis.call('ZADD', following, 'NX', t, b) == 1 then
        code = '1'
        follows[#follows + 1] = a .. ' ' .. b .. ' ' .. t
        follows_some[a] = true
      else
        code = '0'
        t = redis.call('ZSCORE', following, b)
      end
      -- Mutual when b follows a too, since the later of the two follows.
      if follows_some[b] then
        local back = redis.call('ZSCORE', key(b, FOLLOWING), a)
        if back then
          local when = string.format('%.0f', math.max(tonumber(back), tonumber(t)))
          redis.call('ZADD', key(a, MUTUAL), when, b)
          redis.call('ZADD', key(b, MUTUAL), when, a)
        end
      end
      local list = fans[b]
      if not list then
        list = {}
        fans[b] = list
        followees[#followees + 1] = b
      end
      list[#list + 1] = t
      list[#list + 1] = a
      if controlled[a] and redis.call('ZREM', key(a, REQUESTS_OUT), b) == 1 then
        ended[#ended + 1] = a .. ' ' .. b
      end
      if controlled[b] then redis.call('ZREM', key(b, REQUESTS_IN), a) end
    end
  end
  codes[#codes + 1] = code
  if stop and code ~= '1' and code ~= '0' and code ~= 'r' then
    stopped = true
    break
  end
end
for _, b in ipairs(followees) do
  local list, fans_key = fans[b], key(b, FANS)
  for j = 1, #list, 1000 do redis.call('ZADD', fans_key, unpack(list, j, math.min(j + 999, #list))) end
end
local after = import_event(KEYS[#KEYS], registered, follows, ended) or before
-- A batch that stopped short leaves the checkpoint where it was: its rows are read again.
if marks > 0 and not stopped then redis.call('HSET', KEYS[1], unpack(ARGV, 14, 13 + marks)) end
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
