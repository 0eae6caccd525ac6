if blocked(KEYS[5], KEYS[6], ARGV[1]) then return 0 end
if ARGV[3] == '1' and redis.call('HGET', KEYS[7], 'locked') == '1' then
  redis.call('ZADD', KEYS[4], ARGV[2], ARGV[1])
  return 1
end
follow_in(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
end_request(KEYS[4], ARGV[1])
if ARGV[3] == '1' then return 2 end
return 1
