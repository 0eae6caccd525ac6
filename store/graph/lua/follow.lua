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
