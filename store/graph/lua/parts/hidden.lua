local function hidden(k, a)
  if ARGV[a] ~= '' and redis.call('ZSCORE', KEYS[k + 2], ARGV[a]) then return true end
  local s = redis.call('HMGET', KEYS[k], 'locked', 'hideFollowing', 'hideFans')
  local by = ARGV[a + 1]
  if s[2] == '1' and by ~= 'hideFans' then return true end
  if s[3] == '1' and by ~= 'hideFollowing' then return true end
  return s[1] == '1' and (ARGV[a] == '' or not redis.call('ZSCORE', KEYS[k + 1], ARGV[a]))
end
