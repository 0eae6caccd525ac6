-- A follow ends a pending request; most follows have none, so nothing is written then.
local function end_request(requests, member)
  if redis.call('ZSCORE', requests, member) then redis.call('ZREM', requests, member) end
end

local function request_out(requests_out, member, at)
  local added = redis.call('ZADD', requests_out, 'NX', at, member)
  return added, redis.call('ZSCORE', requests_out, member)
end
