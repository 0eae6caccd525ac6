local out = {}
for _, key in ipairs(KEYS) do
  local p = redis.call('HMGET', key, 'name', 'avatarUrl', 'createdAt', 'locked', 'hideFollowing', 'hideFans')
  for i = 1, 6 do out[#out + 1] = p[i] end
end
return out
