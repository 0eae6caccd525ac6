local function accept_owner(requests_in, fans, following, mutual, member, at)
  if redis.call('ZREM', requests_in, member) == 1 then
    follow_in(fans, following, mutual, member, at)
    return 1, at
  end
  return 0, redis.call('ZSCORE', fans, member)
end

-- Returns 1 when the requester now follows (the step that logs the acceptance).
local function accept_requester(requests_out, following, fans, mutual, member, at)
  if redis.call('ZREM', requests_out, member) == 1 and at then
    follow_out(following, fans, mutual, member, at)
    return 1
  end
  return 0
end
