-- A block made now.
local function block_time(_) return now_ms(nil) end
