-- KEYS: the keys of users of one slot, WIDTH each.   ARGV: X, then for each user the times of
-- X's follow of them and of theirs of X ('' for none).   Returns attach's answer for each.
local out = {}
for j = 0, #KEYS / WIDTH - 1 do
  local out_t = tonumber(ARGV[2 + 2 * j])
  local in_t = tonumber(ARGV[3 + 2 * j])
  out[#out + 1] = attach(1 + j * WIDTH, ARGV[1], out_t, in_t)
end
return out
