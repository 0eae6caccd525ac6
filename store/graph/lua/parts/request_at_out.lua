local function request_at_out(blocking, blocked_by, following, requests_out, member, at)
  if redis.call('ZSCORE', blocking, member) or redis.call('ZSCORE', blocked_by, member) then
    return -3, 0, false
  end
  if redis.call('ZSCORE', following, member) then return -4, 0, false end
  local added = redis.call('ZADD', requests_out, 'NX', at, member)
  return 0, added, redis.call('ZSCORE', requests_out, member)
end
