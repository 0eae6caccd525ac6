-- On a cluster, the followers' step of a batch on one node: each follow written to the follower's
-- sets (unless a block either way), the slot's follows and ended requests in an event on its log.
-- KEYS: a key of the node (to route the call)
-- ARGV: the key layout (10 values: parts/import_users), then for each slot: its log, how many
--       follows, then follower, followee, time ('' for now) of each; the cap
-- Returns {letters, times}: a letter a follow (1 added, 0 there already, b blocked) and the
-- follow's time ('' when blocked), in order.
local codes, times = {}, {}
local i = 11
while i < #ARGV do
  local stream, n = ARGV[i], tonumber(ARGV[i + 1])
  local follows, ended = {}, {}
  for j = i + 2, i - 1 + 3 * n, 3 do
    local a, b, at = ARGV[j], ARGV[j + 1], ARGV[j + 2]
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
  import_event(stream, {}, follows, ended)
  i = i + 2 + 3 * n
end
return {table.concat(codes), table.concat(times, ' ')}
