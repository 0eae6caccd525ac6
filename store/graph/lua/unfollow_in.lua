unfollow_step(KEYS[1], KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
