-- ARGV: X, state, reason, then the users X's follows and requests name (store/graph/lifecycle.py).
local x, state = ARGV[1], ARGV[2]
if redis.call('EXISTS', KEYS[1 + PROFILE]) == 0 then
  local at = now_ms(nil)
  local had = flip_off(state, ARGV[3], at)
  if had and RANK[state] > RANK[had] then log_event('ACCOUNT', x, false, at, {'state', state}) end
  return {'off', had}
end
if not covered(given(4), {FOLLOWING, FANS, REQ_IN, REQ_OUT}) then return {'retry'} end
local at = now_ms(nil)
flip_off(state, ARGV[3], at)
for i = 4, #ARGV - 2 do
  if detach(PEERS + (i - 4) * WIDTH, x) == 1 then redis.call('SADD', KEYS[1 + KEPT_WITH], ARGV[i]) end
end
redis.call('DEL', KEYS[1 + REQ_IN], KEYS[1 + REQ_OUT])
log_event('ACCOUNT', x, false, at, {'state', state})
return {'ok', 'ACTIVE'}
