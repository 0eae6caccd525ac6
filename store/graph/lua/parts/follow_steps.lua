local function mutual_if_back(opposite, mutual, member, at)
  local back = redis.call('ZSCORE', opposite, member)
  if back then
    local when = tonumber(at)
    if tonumber(back) > when then when = tonumber(back) end
    redis.call('ZADD', mutual, string.format('%.0f', when), member)
  end
end

local function follow_out(following, fans, mutual, member, at)
  local added = redis.call('ZADD', following, 'NX', at, member)
  if added == 1 then mutual_if_back(fans, mutual, member, at) end
  return added
end

local function follow_in(fans, following, mutual, member, at)
  redis.call('ZADD', fans, at, member)
  mutual_if_back(following, mutual, member, at)
end
