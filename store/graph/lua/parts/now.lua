local function now_ms(given)
  if given ~= nil and given ~= '' then return given end
  local t = redis.call('TIME')
  return string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
