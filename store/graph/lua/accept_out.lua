if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
local changed, at = accept_owner(KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[1], now_ms(nil))
return {0, changed, at}
