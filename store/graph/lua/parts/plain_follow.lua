-- A follow a -> b at t with its own writes (parts/import_follow.lua add), written out where it is
-- used (`-- include: parts/plain_follow`): in the body of a loop over many follows a function call
-- costs more than the follow's own commands. Takes the locals a, b, t and back (look for the
-- follow back; the mutual sets are written when b follows a) after parts/import_follow's fans and
-- mutual; leaves `added` and t (the follow's own time when it was there already). Each followee's
-- new fans are kept in `fans`, a time and a fan after another, for write_fans.
local following = HEAD .. a .. FOLLOWING
local added = redis.call('ZADD', following, 'NX', t, b) == 1
if not added then t = redis.call('ZSCORE', following, b) end
if back then mutual(a, b, t) end
local of_b = fans[b]
if of_b then
  local n = #of_b
  of_b[n + 1], of_b[n + 2] = t, a
else
  fans[b] = {t, a}
  followees[#followees + 1] = b
end
