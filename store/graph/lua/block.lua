if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0} end
local added = redis.call('ZADD', KEYS[3], 'NX', block_time(3), ARGV[2])
local at = redis.call('ZSCORE', KEYS[3], ARGV[2])
if added == 1 then log_event('BLOCK', ME, ARGV[2], at) end
cut(KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], ARGV[2])
redis.call('ZADD', KEYS[9], at, ARGV[1])
cut(KEYS[10], KEYS[11], KEYS[12], KEYS[13], KEYS[14], ARGV[1])
return {0, added}
