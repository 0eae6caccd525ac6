-- On a cluster, the first step of a batch: the users it names on one node, registered where
-- missing (`register`), each slot's new users in an event on the slot's log.
-- KEYS: a key of the node (to route the call)
-- ARGV: the key layout (10 values: parts/import_users), register ('1' / '0'), whether to read
--       the settings (locked), then for each slot: its log and its users (space-separated); the cap
-- Returns one letter a user, in order: k known, l known and locked, n new, u unknown.
local register, settings = ARGV[11] == '1', ARGV[12] == '1'
local codes = {}
for i = 13, #ARGV - 1, 2 do
  local from = #registered + 1
  for user in string.gmatch(ARGV[i + 1], '%S+') do
    local s = user_state(user, register)
    local code = 'u'
    if s == NEW then
      code = 'n'
    elseif s == KNOWN then
      code = (settings and is_locked(user)) and 'l' or 'k'
    end
    codes[#codes + 1] = code
  end
  import_event(ARGV[i], {unpack(registered, from)}, {}, {})
end
return table.concat(codes)
