-- On a cluster, the first step of a batch: the users it names on one node, registered where
-- missing (`register`), each slot's new users in an event on the slot's log.
-- KEYS: a key of the node (to route the call)
-- ARGV: the key layout (10 values: parts/import_users), register ('1' / '0'), whether to read
--       the settings (locked), then for each slot: its log, how many users, the users; the cap
-- Returns one letter a user, in order: k known, l known and locked, n new, u unknown.
local register, settings = ARGV[11] == '1', ARGV[12] == '1'
local codes = {}
local i = 13
while i < #ARGV do
  local stream, n = ARGV[i], tonumber(ARGV[i + 1])
  local from = #registered + 1
  for j = i + 2, i + 1 + n do
    local s = user_state(ARGV[j], register)
    local code = 'u'
    if s == NEW then
      code = 'n'
    elseif s == KNOWN then
      code = (settings and is_locked(ARGV[j])) and 'l' or 'k'
    end
    codes[#codes + 1] = code
  end
  import_event(stream, {unpack(registered, from)}, {}, {})
  i = i + 2 + n
end
return table.concat(codes)
