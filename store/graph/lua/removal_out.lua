if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local changed = redis.call('ZREM', KEYS[2], ARGV[1])
if changed == 1 then log_event(EVENT, ME, ARGV[1], now_ms(nil)) end
return {0, changed}
