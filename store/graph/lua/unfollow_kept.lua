if redis.call('EXISTS', KEYS[1]) == 1 then unfollow_step(KEYS[2], KEYS[3], ARGV[1]) end
return 1
