local at = ARGV[2]
if at == '' then at = false end
if accept_requester(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], at) == 1 then
  log_event('ACCEPT_FOLLOW_REQUEST', ARGV[1], ME, at)
end
return 1
