"""The scripts of account lifecycles (store/graph/lifecycle.py), composed from store/graph/lua/.

Each takes an account's own keys (lifecycle.own_keys) and, after them or alone, other users' keys
(lifecycle.user_keys, WIDTH each). The single-Redis scripts do a whole change atomically; the
others are its steps, each on one slot, for a cluster or an account too big for one script.
"""

from __future__ import annotations

from followgraph.store.graph.scripts import LOG, NOW
from followgraph.store.graph.sources import source
from followgraph.store.redis.lua import LuaScript

_PARTS = NOW + LOG + source("parts/lifecycle")

# ARGV: X, state (DEACTIVATED / SUSPENDED), reason, then every user X's follows and requests name.
# Returns {'ok', 'ACTIVE'}; {'off', the state it had or false when unknown} (a suspension of a
# deactivated account makes it suspended); {'retry'} when X's sets name a user not given.
DEACTIVATE = _PARTS + source("deactivate")

# ARGV: X, the state lifted, then every user kept_with:X names.
# Returns {'ok', state}; {'on'} when on already; {'off', the state it has or false}; {'retry'}.
REACTIVATE = _PARTS + source("reactivate")

# ARGV: X, then every user X's sets name.   Returns {'ok'}, {'unknown'} or {'retry'}.
DELETE = _PARTS + source("delete")

# The steps. X's own keys: FLIP_OFF (ARGV: X, state, reason; returns the state X had, false when
# unknown), FLIP_ON (ARGV: X, the state lifted, n, n dropped users then the kept ones; returns as
# REACTIVATE), ERASE (ARGV: X; returns 1, or 0 when X is gone already).
FLIP_OFF = _PARTS + source("flip_off")
FLIP_ON = _PARTS + source("flip_on")
ERASE = _PARTS + source("erase")
# Other users' keys, of one slot: DETACH (ARGV: X; returns 1 for each whose sets had a follow with X),
# ATTACH (ARGV: X, then two times for each: X's follow of them, theirs of X, '' for none; returns
# lifecycle.lua attach's answer for each), PURGE (ARGV: X; returns 1).
DETACH = _PARTS + source("detach")
ATTACH = _PARTS + source("attach")
PURGE = _PARTS + source("purge")

DEACTIVATE_SCRIPT = LuaScript(DEACTIVATE)
REACTIVATE_SCRIPT = LuaScript(REACTIVATE)
DELETE_SCRIPT = LuaScript(DELETE)
FLIP_OFF_SCRIPT = LuaScript(FLIP_OFF)
FLIP_ON_SCRIPT = LuaScript(FLIP_ON)
ERASE_SCRIPT = LuaScript(ERASE)
DETACH_SCRIPT = LuaScript(DETACH)
ATTACH_SCRIPT = LuaScript(ATTACH)
PURGE_SCRIPT = LuaScript(PURGE)
