local seen = redis.call('GET', KEYS[2])
if not seen then return redis.call('ZCARD', KEYS[1]) end
return redis.call('ZCOUNT', KEYS[1], '(' .. seen, '+inf')
