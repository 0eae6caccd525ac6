local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('ZCARD', key) end
return out
