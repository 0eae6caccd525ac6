-- A follow's own writes in a batch of follows (after parts/import_users, whose keys they use).
--
-- Each followee's new fans: a time and a fan after another, kept as the batch goes and written
-- with one ZADD a followee (500 fans a call at most) once it is done.
local fans, followees = {}, {}

-- `fans_key(b)`: the key of b's fans set.
local function write_fans(fans_key)
  for _, b in ipairs(followees) do
    local list, k = fans[b], fans_key(b)
    for j = 1, #list, 1000 do redis.call('ZADD', k, unpack(list, j, math.min(j + 999, #list))) end
  end
end

-- The mutual sets of a -> b at t when b follows a, since the later of the two follows.
local function mutual(a, b, t)
  local since = redis.call('ZSCORE', key(b, FOLLOWING), a)
  if since then
    local when = string.format('%.0f', math.max(tonumber(since), tonumber(t)))
    redis.call('ZADD', key(a, MUTUAL), when, b)
    redis.call('ZADD', key(b, MUTUAL), when, a)
  end
end

-- The follow a -> b at t, written unless it is there already (then at its own time), with the
-- mutual sets when `back` and b follows a and a's place among b's fans. The following sets are
-- written as the batch goes, so a follow back made earlier in it counts. Returns whether it was
-- added, and its time.
local function add(a, b, t, back)
  -- include: parts/plain_follow
  return added, t
end
