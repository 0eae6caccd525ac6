-- On a cluster, the followers' step of a batch on one node: each follow written to the follower's
-- sets (unless a block either way), the slot's follows and ended requests in an event on its log.
-- KEYS: a key of the node (to route the call)
-- ARGV: the key layout (10 values: parts/import_users), then for each slot: its log and its
--       follows, a 'follower followee time' line each (time '' for now) in one string; the cap
-- Returns {letters, times}: a letter a follow (1 added, 0 there already, b blocked) and the
-- follow's time ('' when blocked), in order.
local codes, times = {}, {}
for i = 11, #ARGV - 1, 2 do
  local follows, ended = {}, {}
  for a, b, at in string.gmatch(ARGV[i + 1], FOLLOW_LINE) do
    local out = has_controls(a)
    if out and blocked(key(a, BLOCKING), key(a, BLOCKED_BY), b) then
      codes[#codes + 1] = 'b'
      times[#times + 1] = ''
    else
      local following = key(a, FOLLOWING)
      local t = at ~= '' and at or stamp()
      if follow_out(following, key(a, FANS), key(a, MUTUAL), b, t) == 1 then
        codes[#codes + 1] = '1'
        follows[#follows + 1] = a .. ' ' .. b .. ' ' .. t
      else
        codes[#codes + 1] = '0'
        t = redis.call('ZSCORE', following, b)
      end
      times[#times + 1] = t
      if out and redis.call('ZREM', key(a, REQUESTS_OUT), b) == 1 then
        ended[#ended + 1] = a .. ' ' .. b
      end
    end
  end
  import_event(ARGV[i], {}, follows, ended)
end
return {table.concat(codes), table.concat(times, ' ')}
