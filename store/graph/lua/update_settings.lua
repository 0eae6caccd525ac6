if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local names = {'locked', 'hideFollowing', 'hideFans'}
local was = redis.call('HMGET', KEYS[1], unpack(names))
for i, name in ipairs(names) do
  if ARGV[i] == '1' then redis.call('HSET', KEYS[1], name, '1') end
  if ARGV[i] == '0' then redis.call('HDEL', KEYS[1], name) end
end
local now = redis.call('HMGET', KEYS[1], unpack(names))
local extra, changed = {}, false
for i, name in ipairs(names) do
  extra[#extra + 1] = name
  extra[#extra + 1] = now[i] and '1' or '0'
  if now[i] ~= was[i] then changed = true end
end
if changed then log_event('SETTINGS', ME, false, now_ms(nil), extra) end
return {was[1], now[1], now[2], now[3]}
