local function blocked(blocking, blocked_by, member)
  return redis.call('ZSCORE', blocking, member) or redis.call('ZSCORE', blocked_by, member)
end
