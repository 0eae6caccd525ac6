local out = {}
for i, key in ipairs(KEYS) do out[i] = redis.call('ZMSCORE', key, unpack(ARGV)) end
return out
