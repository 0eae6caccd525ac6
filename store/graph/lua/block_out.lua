if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local added = redis.call('ZADD', KEYS[2], 'NX', block_time(2), ARGV[1])
cut(KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], ARGV[1])
local at = redis.call('ZSCORE', KEYS[2], ARGV[1])
if added == 1 then log_event('BLOCK', ME, ARGV[1], at) end
return {0, added, at}
