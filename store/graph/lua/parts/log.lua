local ME = ARGV[#ARGV - 1]
local function log_event(kind, actor, target, at, extra)
  local fields = {'k', kind, 'a', actor}
  if target then
    fields[#fields + 1] = 't'
    fields[#fields + 1] = target
  end
  fields[#fields + 1] = 'at'
  fields[#fields + 1] = at
  for _, v in ipairs(extra or {}) do fields[#fields + 1] = v end
  redis.call('XADD', KEYS[#KEYS], 'MAXLEN', '~', ARGV[#ARGV], '*', unpack(fields))
end
