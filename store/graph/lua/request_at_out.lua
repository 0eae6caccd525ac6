if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local status, added, at = request_at_out(KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], ARGV[2])
if added == 1 then log_event('FOLLOW_REQUEST', ME, ARGV[1], at) end
return {status, added, at}
