if redis.call('HGET', KEYS[1], 'locked') == '1' then return {} end
local out = {}
local at = now_ms(nil)
for _, member in ipairs(redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)) do
  accept_owner(KEYS[2], KEYS[3], KEYS[4], KEYS[5], member, at)
  out[#out + 1] = member
  out[#out + 1] = at
end
return out
