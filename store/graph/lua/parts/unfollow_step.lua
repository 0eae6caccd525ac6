local function unfollow_step(set, mutual, member)
  local removed = redis.call('ZREM', set, member)
  redis.call('ZREM', mutual, member)
  return removed
end
