if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local both = #KEYS == 5
if both and redis.call('EXISTS', KEYS[3]) == 0 then return {-2, 0, false} end
local added = redis.call('ZADD', KEYS[2], 'NX', ARGV[2], ARGV[1])
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if added == 1 then log_event('MUTE', ME, ARGV[1], at) end
if both then redis.call('ZADD', KEYS[4], at, ME) end
return {0, added, at}
