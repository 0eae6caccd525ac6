-- KEYS: the keys of users of one slot, WIDTH each.   ARGV: X.
for j = 0, #KEYS / WIDTH - 1 do purge(1 + j * WIDTH, ARGV[1]) end
return 1
