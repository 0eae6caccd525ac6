local followed = 0
for i = 3, #ARGV - 2 do
  local k = (i - 3) * 4
  if accept_requester(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], ARGV[1], ARGV[2]) == 1 then
    log_event('ACCEPT_FOLLOW_REQUEST', ARGV[1], ARGV[i], ARGV[2])
    followed = followed + 1
  end
end
return followed
