if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0, false, false, 0} end
local a_side = {KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8]}
return follower_side(a_side, ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4], ARGV[5])
