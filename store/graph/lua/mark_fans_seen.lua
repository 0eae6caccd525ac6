if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
local at = now_ms(nil)
redis.call('SET', KEYS[1], at)
return at
