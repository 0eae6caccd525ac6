if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local followed = unfollow_step(KEYS[2], KEYS[3], ARGV[1])
local changed = followed + redis.call('ZREM', KEYS[5], ARGV[1])
if changed > 0 then log_unfollow(ARGV[1], ARGV[2], followed) end
return {0, changed, redis.call('ZSCORE', KEYS[4], ARGV[1])}
