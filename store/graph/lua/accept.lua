if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
if redis.call('EXISTS', KEYS[2]) == 0 then return {-2, 0} end
-- Without B's side of the request (a stale entry of A's) there is nothing to accept.
if not redis.call('ZSCORE', KEYS[7], ARGV[1]) then
  redis.call('ZREM', KEYS[3], ARGV[2])
  return {0, 0}
end
local changed, at = accept_owner(KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[2], now_ms(nil))
if accept_requester(KEYS[7], KEYS[8], KEYS[9], KEYS[10], ARGV[1], at) == 1 then
  log_event('ACCEPT_FOLLOW_REQUEST', ARGV[1], ARGV[2], at)
end
return {0, changed}
