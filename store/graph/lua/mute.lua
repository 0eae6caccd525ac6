if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false} end
-- On a single Redis B's keys come too (profile:B muted_by:B); on a cluster B's step is the caller's.
local both = #KEYS == 5
if both and redis.call('EXISTS', KEYS[3]) == 0 then return {-2, 0, false} end
local at = now_ms(nil)
if ARGV[2] == '1' then
  local added = redis.call('ZADD', KEYS[2], 'NX', at, ARGV[1])
  at = redis.call('ZSCORE', KEYS[2], ARGV[1])
  if added == 1 then log_event('MUTE', ME, ARGV[1], at) end
  if both then redis.call('ZADD', KEYS[4], at, ME) end
  return {0, added, at}
end
local removed = redis.call('ZREM', KEYS[2], ARGV[1])
if removed == 1 then log_event('UNMUTE', ME, ARGV[1], at) end
if both then redis.call('ZREM', KEYS[4], ME) end
return {0, removed, false}
