redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
cut(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[1])
return 1
