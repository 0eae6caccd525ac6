local function over_limit(key, amount, window)
  if amount == '' then return false end
  amount, window = tonumber(amount), tonumber(window)
  local now = tonumber(now_ms(nil))
  if redis.call('LLEN', key) >= amount then
    local oldest = tonumber(redis.call('LINDEX', key, amount - 1))
    if oldest + window > now then return string.format('%.0f', oldest + window) end
  end
  redis.call('LPUSH', key, string.format('%.0f', now))
  redis.call('LTRIM', key, 0, amount - 1)
  redis.call('PEXPIRE', key, window)
  return false
end
