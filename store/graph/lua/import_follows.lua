-- KEYS: [the import's checkpoint hash,] the log
-- ARGV: the key layout (10 values: parts/import_users), register ('1' / '0'), stop ('1' / '0'),
--       the number of checkpoint values, those values (field, value pairs), then follower,
--       followee, time ('' for now) of each follow; then ME and the cap (LOG)
-- Returns {a letter a follow (1 added, 0 there already, r a request made, b blocked, f / F the
-- follower / followee unknown), users registered}.
local register, stop = ARGV[11] == '1', ARGV[12] == '1'
local marks = tonumber(ARGV[13])
local codes, follows, ended = {}, {}, {}
-- Each followee's new fans, written with one ZADD after the loop: the follows' own order only
-- matters to the following sets, which the loop writes (and reads) as it goes.
local fans, followees = {}, {}
local stopped = false
for i = 14 + marks, #ARGV - 4, 3 do
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
import_event(KEYS[#KEYS], registered, follows, ended)
-- A batch that stopped short leaves the checkpoint where it was: its rows are read again.
if marks > 0 and not stopped then redis.call('HSET', KEYS[1], unpack(ARGV, 14, 13 + marks)) end
return {table.concat(codes), #registered}
