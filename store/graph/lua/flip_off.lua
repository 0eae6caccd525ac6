-- ARGV: X, state, reason. X's own keys only: the first step of a change in batches.
local at = now_ms(nil)
local had = flip_off(ARGV[2], ARGV[3], at)
if had == 'ACTIVE' or (had and RANK[ARGV[2]] > RANK[had]) then log_event('ACCOUNT', ARGV[1], false, at, {'state', ARGV[2]}) end
return had
