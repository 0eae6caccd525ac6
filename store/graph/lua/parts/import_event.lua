-- The event of what a batch changed, when it changed anything: the users it registered (at the
-- event's time), the follows it added ('follower followee time' lines) and the pending requests
-- those follows ended ('follower followee' lines), appended to `stream` (capped as LOG does).
-- `chain`: fields that come right after `at` ({'run', id, 'before', id}: import_follows.lua), or
-- nil. Returns the event's id, or nil when there was nothing to log.
local function import_event(stream, users, follows, ended, chain)
  if #follows == 0 and #users == 0 and #ended == 0 then return nil end
  local fields = {'k', 'IMPORT', 'a', '', 'at', stamp()}
  for _, value in ipairs(chain or {}) do fields[#fields + 1] = value end
  if #users > 0 then
    fields[#fields + 1] = 'users'
    fields[#fields + 1] = table.concat(users, ' ')
  end
  if #follows > 0 then
    fields[#fields + 1] = 'follows'
    fields[#fields + 1] = table.concat(follows, '\n')
  end
  if #ended > 0 then
    fields[#fields + 1] = 'requests'
    fields[#fields + 1] = table.concat(ended, '\n')
  end
  return redis.call('XADD', stream, 'MAXLEN', '~', ARGV[#ARGV], '*', unpack(fields))
end
