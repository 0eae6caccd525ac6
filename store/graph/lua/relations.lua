return {redis.call('ZMSCORE', KEYS[1], unpack(ARGV)), redis.call('ZMSCORE', KEYS[2], unpack(ARGV))}
