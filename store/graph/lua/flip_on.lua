-- ARGV: X, the state being lifted, the number of dropped users, the dropped, then the kept ones.
-- X's own keys only: the last step of a reactivation in batches.
if redis.call('EXISTS', KEYS[1 + PROFILE]) == 1 then return {'on'} end
local state = redis.call('HGET', KEYS[1 + ACCOUNT], 'state')
if state ~= ARGV[2] then return {'off', state or false} end
local n = tonumber(ARGV[3])
local dropped, kept = {}, {}
for i = 4, #ARGV - 2 do
  if i < 4 + n then dropped[#dropped + 1] = ARGV[i] else kept[#kept + 1] = ARGV[i] end
end
flip_on(dropped, kept)
log_event('ACCOUNT', ARGV[1], false, now_ms(nil), {'state', 'ACTIVE'})
return {'ok', state}
