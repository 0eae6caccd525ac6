if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if #KEYS == 4 and redis.call('EXISTS', KEYS[3]) == 0 then return {-2, 0} end
local at = now_ms(nil)
if ARGV[2] == '1' then
  local added = redis.call('ZADD', KEYS[2], 'NX', at, ARGV[1])
  if added == 1 then log_event('MUTE', ME, ARGV[1], at) end
  return {0, added}
end
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
if removed == 1 then log_event('UNMUTE', ME, ARGV[1], at) end
return {0, removed}
