-- On a cluster, the followees' step of a batch on one node, at the times the followers' step kept.
-- KEYS: a key of the node (to route the call)
-- ARGV: the key layout (10 values: parts/import_users), then the follows, a 'follower followee
--       time' line each, in one string
-- Returns a letter a follow: 1 written, b refused (a block either way came between the steps: the
-- caller undoes the followers' step).
local codes = {}
for a, b, t in string.gmatch(ARGV[11], FOLLOW_LINE) do
  local controls = has_controls(b)
  if controls and blocked(key(b, BLOCKING), key(b, BLOCKED_BY), a) then
    codes[#codes + 1] = 'b'
  else
    follow_in(key(b, FANS), key(b, FOLLOWING), key(b, MUTUAL), a, t)
    if controls then redis.call('ZREM', key(b, REQUESTS_IN), a) end
    codes[#codes + 1] = '1'
  end
end
return table.concat(codes)
