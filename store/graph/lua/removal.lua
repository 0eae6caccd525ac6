if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0} end
local changed = redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[1])
if changed == 1 then log_event(EVENT, ME, ARGV[2], now_ms(nil)) end
return {0, changed}
