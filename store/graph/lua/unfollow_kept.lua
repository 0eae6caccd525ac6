if redis.call('EXISTS', KEYS[1]) == 1 and unfollow_step(KEYS[2], KEYS[3], ARGV[1]) == 1 then
  log_unfollow(ARGV[2], ARGV[3], 1)
end
return 1
