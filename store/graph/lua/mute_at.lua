if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if #KEYS == 4 and redis.call('EXISTS', KEYS[3]) == 0 then return {-2, 0} end
local added = redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
if added == 1 then log_event('MUTE', ME, ARGV[1], ARGV[2]) end
return {0, added}
