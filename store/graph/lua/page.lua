local key = KEYS[1]
local mode, has_cursor, cs, cm, limit = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4], tonumber(ARGV[5])
local total = redis.call('ZCARD', key)

-- Byte order, as Redis orders members; Lua's own < follows the server's locale.
local function bytes_gt(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return #a > #b
end

-- How many entries come strictly before (cs, cm), and whether (cs, cm) itself is in the set.
local function before(score, member)
  local own = redis.call('ZSCORE', key, member)
  if own and tonumber(own) == tonumber(score) then
    return redis.call('ZREVRANK', key, member), true
  end
  -- The cursor's entry left the list: count the higher scores, then the ties above it.
  local n = redis.call('ZCOUNT', key, '(' .. score, '+inf')
  local offset = 0
  while true do
    local ties = redis.call('ZREVRANGEBYSCORE', key, score, score, 'LIMIT', offset, 256)
    for _, m in ipairs(ties) do
      if bytes_gt(m, member) then n = n + 1 else return n, false end
    end
    if #ties < 256 then return n, false end
    offset = offset + #ties
  end
end

local start, stop
if mode == 'first' then
  start = 0
  if has_cursor then
    local b, present = before(cs, cm)
    start = b
    if present then start = b + 1 end
  end
  stop = math.min(start + limit, total)
else
  stop = total
  if has_cursor then stop = before(cs, cm) end
  start = math.max(stop - limit, 0)
end
if #KEYS > 1 and hidden(2, 6) then return {total, 0, 0, {}, 1} end
local rows = {}
if stop > start then rows = redis.call('ZREVRANGE', key, start, stop - 1, 'WITHSCORES') end
return {total, start, stop, rows, 0}
