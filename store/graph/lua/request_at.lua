if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0} end
local status, added, at = request_at_out(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[2], ARGV[3])
if status == 0 then redis.call('ZADD', KEYS[7], at, ARGV[1]) end
if added == 1 then log_event('FOLLOW_REQUEST', ME, ARGV[2], at) end
return {status, added}
