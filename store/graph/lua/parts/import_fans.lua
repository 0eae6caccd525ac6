-- Each followee's new fans in a batch of follows: a time and a fan after another, kept as the
-- batch goes and written with one ZADD a followee (500 fans a call at most) once it is done.
local fans, followees = {}, {}

local function fan(a, b, t)
  local of_b = fans[b]
  if not of_b then
    of_b = {}
    fans[b] = of_b
    followees[#followees + 1] = b
  end
  of_b[#of_b + 1] = t
  of_b[#of_b + 1] = a
end

-- `fans_key(b)`: the key of b's fans set.
local function write_fans(fans_key)
  for _, b in ipairs(followees) do
    local list, k = fans[b], fans_key(b)
    for j = 1, #list, 1000 do redis.call('ZADD', k, unpack(list, j, math.min(j + 999, #list))) end
  end
end
