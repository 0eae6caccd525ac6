local function follower_side(k, b, at, locked, amount, window)
  local retry = over_limit(k[7], amount, window)
  if retry then return {-4, 0, retry, false, 0} end
  if blocked(k[4], k[5], b) then return {-3, 0, false, false, 0} end
  local back = redis.call('ZSCORE', k[2], b)
  if at == '' and locked and not redis.call('ZSCORE', k[1], b) then
    local added, requested = request_out(k[6], b, now_ms(nil))
    if added == 1 then log_event('FOLLOW_REQUEST', ME, b, requested) end
    return {0, added, requested, back, 1}
  end
  local changed = follow_out(k[1], k[2], k[3], b, now_ms(at))
  end_request(k[6], b)
  local followed = redis.call('ZSCORE', k[1], b)
  if changed == 1 then log_event('FOLLOW', ME, b, followed) end
  return {0, changed, followed, back, 0}
end
