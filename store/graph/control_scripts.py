"""The scripts of blocks, mutes, follow requests and settings, composed from store/graph/lua/
(see store/graph/scripts.py for the rules: idempotent steps over one user's keys; both steps in one
script on a single Redis, each alone on its own user's slot on a cluster)."""

from __future__ import annotations

from followgraph.store.graph.scripts import FOLLOW_STEPS, LOG, NOW
from followgraph.store.graph.sources import source
from followgraph.store.redis.lua import LuaScript

# A block ends everything between the two users on one side: follows both ways, the mutual entry,
# and requests both ways.
_CUT = source("parts/cut")


def _block(time: str) -> tuple[str, str]:
    """block(A, B) on a single Redis and A's step of it on a cluster, the block's time given by the
    part `time`, which defines block_time(i) (B's step is BLOCK_IN either way)."""
    return LOG + _CUT + time + source("block"), LOG + _CUT + time + source("block_out")


# block(A, B) on a single Redis.
# KEYS: profile:A profile:B blocking:A following:A fans:A mutual:A requests_in:A requests_out:A
#       blocked_by:B following:B fans:B mutual:B requests_in:B requests_out:B
# ARGV: A B   Returns {status, added}.
# A's step of a block, on a cluster (BLOCK_OUT).
# KEYS: profile:A blocking:A following:A fans:A mutual:A requests_in:A requests_out:A   ARGV: B
# Returns {status, added, time}.
BLOCK, BLOCK_OUT = _block(NOW + source("parts/block_now"))

# B's step of a block, on a cluster.
# KEYS: blocked_by:B following:B fans:B mutual:B requests_in:B requests_out:B   ARGV: A, time
BLOCK_IN = _CUT + source("block_in")


def _removal(event: str) -> tuple[str, str, str]:
    """An undone relation that A's set holds and B's set mirrors (a block, a request to A): the
    script on a single Redis, A's step and B's step on a cluster, logging `event` when A's entry
    was there.
    Single: KEYS profile:A profile:B A's set B's set, ARGV A B. A's step: KEYS profile:A A's set,
    ARGV B. Both return {status, changed}. B's step: KEYS B's set, ARGV A."""
    # The event's kind is the one value that differs between the removals: a Lua constant.
    kind = f"\nlocal EVENT = '{event}'\n"
    return (
        NOW + LOG + kind + source("removal"),
        NOW + LOG + kind + source("removal_out"),
        source("removal_in"),
    )


# unblock(A, B): KEYS profile:A profile:B blocking:A blocked_by:B (A's step: profile:A blocking:A;
# B's: blocked_by:B). Follows the block ended stay ended.
UNBLOCK, UNBLOCK_OUT, UNBLOCK_IN = _removal("UNBLOCK")

# mute / unmute: A's keys, and on a single Redis B's (on a cluster B's registration is checked apart
# and MIRROR is B's step).
# KEYS: profile:A muting:A [profile:B muted_by:B]   ARGV: B, '1' to mute / '0' to unmute
# Returns {status, changed, the mute's time or false}.
MUTE = NOW + LOG + source("mute")

# The owner's side of accepting B's request (A's slot): B becomes A's fan at `now`. A retry after
# the owner's step finds B among the fans and returns that time, so the requester's step completes.
# The requester's side (B's slot) follows only while B's request is still there, its source of
# truth: a withdrawal (or a block) that ran between the two steps wins, and its own second step
# removes the fan entry the owner's step wrote. Following regardless would leave B following A
# without being A's fan.
_ACCEPT_STEPS = FOLLOW_STEPS + source("parts/accept_steps")

# accept(A accepts B) on a single Redis.
# KEYS: profile:A profile:B requests_in:A fans:A following:A mutual:A
#       requests_out:B following:B fans:B mutual:B
# ARGV: A B   Returns {status, changed}.
ACCEPT = NOW + LOG + _ACCEPT_STEPS + source("accept")

# The owner's step, on a cluster.   KEYS: profile:A requests_in:A fans:A following:A mutual:A
# ARGV: B   Returns {status, changed, B's follow time or false}.
ACCEPT_OUT = NOW + _ACCEPT_STEPS + source("accept_out")

# The requester's step (on a cluster, and after ACCEPT_OLDEST); it logs the acceptance, as the
# follow is written here, on the requester's slot.   KEYS: requests_out:B following:B fans:B mutual:B
# ARGV: A, follow time ('' when there is none: the request is only dropped); ME is B.
ACCEPT_IN = LOG + _ACCEPT_STEPS + source("accept_in")

# The requesters' steps of a batch after ACCEPT_OLDEST in one call, on a single Redis (where every
# key is on the one server): ACCEPT_IN for each.
# KEYS: requests_out:B following:B fans:B mutual:B of each requester B in turn
# ARGV: A, follow time, then each B. Returns how many now follow.
ACCEPT_IN_MANY = LOG + _ACCEPT_STEPS + source("accept_in_many")

# Up to ARGV[1] of A's oldest pending requests accepted at once, while A is unlocked (a lock
# that comes back stops it). KEYS: profile:A requests_in:A fans:A following:A mutual:A
# Returns {requester, time, requester, time, ...}; each requester's own step follows (ACCEPT_IN).
ACCEPT_OLDEST = NOW + _ACCEPT_STEPS + source("accept_oldest")

# reject(A rejects B): KEYS profile:A profile:B requests_in:A requests_out:B (the owner's step:
# profile:A requests_in:A; the requester's: requests_out:B).
REJECT, REJECT_OUT, REJECT_IN = _removal("REJECT_FOLLOW_REQUEST")

# KEYS: profile   ARGV: locked, hideFollowing, hideFans: '1' on, '0' off, '' unchanged
# Returns {locked before, locked, hideFollowing, hideFans} ('1' or false), or -1 for an unknown user.
UPDATE_SETTINGS = NOW + LOG + source("update_settings")

# -- imports: the same changes at a given time (epoch ms), idempotent, a batch to a pipeline ------

# block(A, B) at a given time (an existing block keeps its time): KEYS as BLOCK and BLOCK_OUT,
# ARGV as theirs followed by the time; B's step is BLOCK_IN.
BLOCK_AT, BLOCK_AT_OUT = _block(source("parts/block_at"))

# mute(A, B) at a given time: keys as MUTE's.   ARGV: B time   Returns {status, added, time}.
MUTE_AT = LOG + source("mute_at")

# B's step of a mute on a cluster: the mirror entry.   KEYS: muted_by:B   ARGV: A, the mute's time
# ('' for an unmute).   Returns 1.
MIRROR = source("mirror")

# A's pending request to follow B, at a given time; refused (-3) when either blocks the other and
# (-4) when A already follows B. Whether B is locked is not asked: the imported graph is taken as
# it is.
_REQUEST_AT_OUT = source("parts/request_at_out")

# On a single Redis.
# KEYS: profile:A profile:B blocking:A blocked_by:A following:A requests_out:A requests_in:B
# ARGV: A B time   Returns {status, added}.
REQUEST_AT = LOG + _REQUEST_AT_OUT + source("request_at")

# A's step, on a cluster.   KEYS: profile:A blocking:A blocked_by:A following:A requests_out:A
# ARGV: B time   Returns {status, added, time}.
REQUEST_AT_OUT = LOG + _REQUEST_AT_OUT + source("request_at_out")

# B's step, on a cluster.   KEYS: requests_in:B blocking:B blocked_by:B   ARGV: A, time
# Returns 0 when either blocks the other (a block that ran between the steps: the caller drops A's
# request with REJECT_IN), 1 otherwise.
REQUEST_AT_IN = source("request_at_in")

BLOCK_SCRIPT = LuaScript(BLOCK)
BLOCK_OUT_SCRIPT = LuaScript(BLOCK_OUT)
BLOCK_IN_SCRIPT = LuaScript(BLOCK_IN)
UNBLOCK_SCRIPT = LuaScript(UNBLOCK)
UNBLOCK_OUT_SCRIPT = LuaScript(UNBLOCK_OUT)
UNBLOCK_IN_SCRIPT = LuaScript(UNBLOCK_IN)
MUTE_SCRIPT = LuaScript(MUTE)
ACCEPT_SCRIPT = LuaScript(ACCEPT)
ACCEPT_OUT_SCRIPT = LuaScript(ACCEPT_OUT)
ACCEPT_IN_SCRIPT = LuaScript(ACCEPT_IN)
ACCEPT_IN_MANY_SCRIPT = LuaScript(ACCEPT_IN_MANY)
ACCEPT_OLDEST_SCRIPT = LuaScript(ACCEPT_OLDEST)
REJECT_SCRIPT = LuaScript(REJECT)
REJECT_OUT_SCRIPT = LuaScript(REJECT_OUT)
REJECT_IN_SCRIPT = LuaScript(REJECT_IN)
UPDATE_SETTINGS_SCRIPT = LuaScript(UPDATE_SETTINGS)
BLOCK_AT_SCRIPT = LuaScript(BLOCK_AT)
BLOCK_AT_OUT_SCRIPT = LuaScript(BLOCK_AT_OUT)
MUTE_AT_SCRIPT = LuaScript(MUTE_AT)
MIRROR_SCRIPT = LuaScript(MIRROR)
REQUEST_AT_SCRIPT = LuaScript(REQUEST_AT)
REQUEST_AT_OUT_SCRIPT = LuaScript(REQUEST_AT_OUT)
REQUEST_AT_IN_SCRIPT = LuaScript(REQUEST_AT_IN)
