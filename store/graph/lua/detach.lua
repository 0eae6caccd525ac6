-- KEYS: the keys of users of one slot, WIDTH each.   ARGV: X.
-- Returns, for each, 1 when its sets had a follow with X.
local had = {}
for j = 0, #KEYS / WIDTH - 1 do had[#had + 1] = detach(1 + j * WIDTH, ARGV[1]) end
return had
