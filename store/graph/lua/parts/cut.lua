local function cut(following, fans, mutual, requests_in, requests_out, member)
  redis.call('ZREM', following, member)
  redis.call('ZREM', fans, member)
  redis.call('ZREM', mutual, member)
  redis.call('ZREM', requests_in, member)
  redis.call('ZREM', requests_out, member)
end
