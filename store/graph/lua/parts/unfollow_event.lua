local function log_unfollow(followee, removed_by_followee, followed)
  local at = now_ms(nil)
  if removed_by_followee ~= '1' then log_event('UNFOLLOW', ME, followee, at)
  elseif followed == 1 then log_event('REMOVE_FAN', followee, ME, at)
  else log_event('REJECT_FOLLOW_REQUEST', followee, ME, at) end
end
