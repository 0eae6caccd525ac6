-- ARGV: X, then every user X's sets name.
local x = ARGV[1]
if redis.call('EXISTS', KEYS[1 + PROFILE]) == 0 and redis.call('EXISTS', KEYS[1 + ACCOUNT]) == 0 then
  return {'unknown'}
end
local offsets = {FOLLOWING, FANS, MUTUAL, REQ_IN, REQ_OUT, BLOCKING, BLOCKED_BY, MUTING, MUTED_BY, KEPT_BY, KEPT_WITH}
if not covered(given(2), offsets) then return {'retry'} end
for i = 2, #ARGV - 2 do purge(PEERS + (i - 2) * WIDTH, x) end
erase()
log_event('ACCOUNT', x, false, now_ms(nil), {'state', 'DELETED'})
return {'ok'}
