-- An account that is off (store/graph/lifecycle.py) is not written: it keeps its profile aside.
if redis.call('EXISTS', KEYS[2]) == 1 then return {-1, false, false, false} end
local fields = {'name', 'avatarUrl', 'createdAt'}
local before = redis.call('HMGET', KEYS[1], unpack(fields))
local created = redis.call('HSETNX', KEYS[1], 'createdAt', now_ms(ARGV[1]))
for i = 2, #ARGV - 2, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local p = redis.call('HMGET', KEYS[1], unpack(fields))
local extra, changed = {}, created == 1
for i, name in ipairs(fields) do
  if p[i] then
    extra[#extra + 1] = name
    extra[#extra + 1] = p[i]
  end
  if p[i] ~= before[i] then changed = true end
end
if changed then log_event('USER', ME, false, now_ms(nil), extra) end
return {created, p[1], p[2], p[3]}
