-- A block at the time an import gives, in ARGV[i].
local function block_time(i) return ARGV[i] end
