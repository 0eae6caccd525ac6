if redis.call('EXISTS', KEYS[1]) == 0 then
  -- A's account is off: B's removal of its fan A ends the follow A's sets keep (lifecycle.py).
  local by_b = ARGV[3] == '1' and redis.call('EXISTS', KEYS[2]) == 1
  if by_b and redis.call('EXISTS', KEYS[10]) == 1 and unfollow_step(KEYS[3], KEYS[4], ARGV[2]) == 1 then
    log_unfollow(ARGV[2], ARGV[3], 1)
  end
  return {-1, 0, false}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  -- B's account is off: A's unfollow ends the follow B's sets keep.
  if ARGV[3] ~= '1' and redis.call('EXISTS', KEYS[11]) == 1 and unfollow_step(KEYS[6], KEYS[7], ARGV[1]) == 1 then
    log_unfollow(ARGV[2], ARGV[3], 1)
  end
  return {-2, 0, false}
end
local followed = unfollow_step(KEYS[3], KEYS[4], ARGV[2])
local changed = followed + redis.call('ZREM', KEYS[8], ARGV[2])
if changed > 0 then log_unfollow(ARGV[2], ARGV[3], followed) end
unfollow_step(KEYS[6], KEYS[7], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
return {0, changed, redis.call('ZSCORE', KEYS[5], ARGV[2])}
