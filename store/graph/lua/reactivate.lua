-- ARGV: X, the state being lifted (DEACTIVATED or SUSPENDED), then the users kept_with:X names.
local x = ARGV[1]
if redis.call('EXISTS', KEYS[1 + PROFILE]) == 1 then return {'on'} end
local state = redis.call('HGET', KEYS[1 + ACCOUNT], 'state')
if state ~= ARGV[2] then return {'off', state or false} end
if not covered(given(3), {KEPT_WITH}) then return {'retry'} end
local dropped, kept = {}, {}
for i = 3, #ARGV - 2 do
  local m = ARGV[i]
  local out_t = time_of(redis.call('ZSCORE', KEYS[1 + FOLLOWING], m))
  local in_t = time_of(redis.call('ZSCORE', KEYS[1 + FANS], m))
  local back = attach(PEERS + (i - 3) * WIDTH, x, out_t, in_t)
  if back == 0 then dropped[#dropped + 1] = m elseif back == 2 then kept[#kept + 1] = m end
end
flip_on(dropped, kept)
log_event('ACCOUNT', x, false, now_ms(nil), {'state', 'ACTIVE'})
return {'ok', state}
