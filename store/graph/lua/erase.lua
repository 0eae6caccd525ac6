-- ARGV: X. X's own keys only: the last step of a deletion in batches.
if redis.call('EXISTS', KEYS[1 + PROFILE]) == 0 and redis.call('EXISTS', KEYS[1 + ACCOUNT]) == 0 then
  return 0
end
erase()
log_event('ACCOUNT', ARGV[1], false, now_ms(nil), {'state', 'DELETED'})
return 1
