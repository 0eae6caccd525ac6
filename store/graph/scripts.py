"""The store's scripts, composed from their Lua sources (store/graph/lua/, read by sources.py).

Every write is a script so that it is conditional and idempotent: running it twice (a retry after
a lost reply) leaves the same state as running it once. The follow and unfollow steps are written
once as Lua functions over one user's keys; the single-Redis scripts run both users' steps in one
atomic call; on Redis Cluster each step runs alone, on its own user's slot.

Times are epoch milliseconds from the server's clock (TIME), so every server process agrees on
the order of follows. Scores are whole numbers and are passed and returned as decimal strings.
The comments beside each script say what it takes (KEYS, ARGV) and returns.
"""

from __future__ import annotations

from followgraph.store.graph.sources import source
from followgraph.store.redis.lua import KeyedRead, LuaScript, ReadCommand

# The current time, unless the caller supplied one (imports keep their original times).
NOW = source("parts/now")

# The change log (store/graph/events.py). Every writing script takes three more inputs after its own:
# the stream as its last key, then the acting user's id and the stream's approximate cap as its
# last two arguments (store.events.logged adds them). An event is appended only when something
# changed, so a retried script adds none; it is written in the same atomic call as the change.
LOG = source("parts/log")

# The two steps of a follow A -> B, each on one user's slot. A's step comes first: A's following set
# is the source of truth, so a crash between the steps leaves only derived entries behind, which a
# retry of the follow (or `followgraph repair`) completes.
#
# follow_out, on A's slot: B joins following:A (keeping an existing follow's time); if B already
# follows A, the pair becomes mutual at the later of the two times. Returns 1 if B was added.
# follow_in, on B's slot: A is B's fan at `at`, A's follow time, overwriting whatever a half-done
# earlier change left; mutual again if B follows A. Both are idempotent.
FOLLOW_STEPS = source("parts/follow_steps")

# unfollow_out on A's slot, unfollow_in on B's: remove the follow and the mutual entry.
_UNFOLLOW_STEP = source("parts/unfollow_step")

# The event of an unfollow of `followee` by ME (`followed`: 1 when a follow ended, 0 when only a
# request did). When the followee asked for it: a fan removal, or the rejection of the request.
_UNFOLLOW_EVENT = source("parts/unfollow_event")

# Whether `member` and the owner of `blocking` / `blocked_by` block each other either way.
_BLOCKED = source("parts/blocked")

# A follow of a locked account is a request: requests_out of the follower (its source of truth)
# and requests_in of the locked account, at the same time. An explicit time (an import) is never a
# request: the imported graph is taken as it is.
_REQUEST_STEPS = source("parts/request_steps")

# The follow rate limit (store/graph/ratelimit.py): an exact moving window, the times of the follower's
# last `amount` follows in a list on the follower's slot, newest first. A follow is refused when the
# oldest of them is still inside the window; it is then not counted, and the reply says when that
# oldest follow leaves the window (epoch ms). `amount` '' means no limit (imports, or the limit off).
_LIMIT = source("parts/limit")

# The follower's side of a follow, on A's slot (A is known): the limit, blocks either way, then a
# request (B locked, A not following B yet, no explicit time) or the follow. `k` holds following:A
# fans:A mutual:A blocking:A blocked_by:A requests_out:A and the follow limit key of A. Returns as
# FOLLOW does; B's side is the caller's.
_FOLLOWER_SIDE = source("parts/follower_side")

# Both steps in one atomic script, on a single Redis.
# KEYS: profile:A profile:B following:A fans:A mutual:A fans:B following:B mutual:B
#       blocking:A blocked_by:A requests_out:A requests_in:B follow limit:A
# ARGV: A B [at] [limit amount] [limit window ms]
# Returns {status, changed, time, B's follow time of A or false, pending}: status -1/-2 = A/B
# unknown, -3 = one blocks the other, -4 = A is over the follow limit (time: when to retry);
# pending 1 when the follow became a request (time: its time).
FOLLOW = NOW + LOG + FOLLOW_STEPS + _BLOCKED + _REQUEST_STEPS + _LIMIT + _FOLLOWER_SIDE + source("follow")

# The first step alone, on a cluster (B is known to exist; `locked` was read on B's slot).
# KEYS: profile:A following:A fans:A mutual:A blocking:A blocked_by:A requests_out:A follow limit:A
# ARGV: B [at] locked ('1' / '0') [limit amount] [limit window ms]
# Returns as FOLLOW.
FOLLOW_OUT = (
    NOW + LOG + FOLLOW_STEPS + _BLOCKED + _REQUEST_STEPS + _LIMIT + _FOLLOWER_SIDE + source("follow_out")
)

# The second step alone, on a cluster.
# KEYS: fans:B following:B mutual:B requests_in:B blocking:B blocked_by:B profile:B
# ARGV: A, time, pending ('1' / '0')
# Returns 0 when either blocks the other (a block that ran between the steps: the caller undoes the
# first); 2 when a request finds B no longer locked (B unlocked between the steps, and the
# acceptance of B's pending requests may be over): A is B's fan at the request's time, and the
# caller turns A's request into the follow; 1 otherwise.
FOLLOW_IN = FOLLOW_STEPS + _BLOCKED + _REQUEST_STEPS + source("follow_in")

# Both steps in one atomic script, on a single Redis. An unfollow also withdraws a pending request.
# KEYS: profile:A profile:B following:A mutual:A fans:A fans:B mutual:B requests_out:A requests_in:B
#       account:A account:B
# ARGV: A B, '1' when B removes A as a fan
# When the other user's account is off (store/graph/lifecycle.py), the follow its sets keep ends and
# the status still says the user is unknown.
# Returns {status, changed, B's follow time of A or false}.
UNFOLLOW = NOW + LOG + _UNFOLLOW_STEP + _UNFOLLOW_EVENT + source("unfollow")

# The first step alone, on a cluster.
# KEYS: profile:A following:A mutual:A fans:A requests_out:A   ARGV: B, '1' when B removes A as a fan
# Returns {status, changed, B's follow time of A or false}.
UNFOLLOW_OUT = NOW + LOG + _UNFOLLOW_STEP + _UNFOLLOW_EVENT + source("unfollow_out")

# The second step alone, on a cluster.   KEYS: fans:B mutual:B requests_in:B   ARGV: A
UNFOLLOW_IN = _UNFOLLOW_STEP + source("unfollow_in")

# On a cluster, the end of a follow that the sets of a user whose account is off keep, logged on
# that user's slot as the unfollow (or fan removal) it is.
# KEYS: account, the set and the mutual set holding the other user, the log of the slot
# ARGV: the other user, the followee, '1' when the followee removes a fan, then the follower and the cap
UNFOLLOW_KEPT = NOW + LOG + _UNFOLLOW_STEP + _UNFOLLOW_EVENT + source("unfollow_kept")

# KEYS: profile account   ARGV: [createdAt] then field, value pairs.
# Returns {created (1/0), name, avatarUrl, createdAt}; the event (USER) holds the profile after it;
# {-1, ...} for an account that is off, which is left as it is.
UPSERT_USER = NOW + LOG + source("upsert_user")

# KEYS: fans_seen profile   Returns the mark, epoch ms; -1 when the user is not registered.
MARK_FANS_SEEN = NOW + source("mark_fans_seen")

# KEYS: fans fans_seen   Returns how many fans followed after the mark (all of them without one).
NEW_FANS_COUNT = source("new_fans_count")

# KEYS: profile keys (of one slot, on a cluster)   Returns name, avatarUrl, createdAt (or false) and
# the settings locked, hideFollowing, hideFans for each, flat. Reads only. One command instead of a
# pipeline of HMGETs: the client's per-command cost dominates here.
PROFILE_FIELDS = ("name", "avatarUrl", "createdAt", "locked", "hideFollowing", "hideFans")
PROFILES = source("profiles")  # reads PROFILE_FIELDS in order (tests/store/graph/test_sources.py)

# KEYS: viewer's blocking, blocked_by, muting, requests_out, requests_in   ARGV: user ids
# Returns a ZMSCORE reply per key: whether the viewer blocks each user, is blocked by them, mutes
# them, asked to follow them, was asked by them. The viewer's keys only: one slot. Reads only.
CONTROLS = source("controls")

# KEYS: following, fans, mutual keys of each user in turn (of one slot, on a cluster)
# Returns their ZCARDs, flat. Reads only.
COUNTS = source("counts")

# Whether a user's list is hidden from a viewer who is not its owner: the owner blocks the viewer,
# hides the list, or is locked and the viewer is not a fan. Everything it reads is on the owner's
# slot. KEYS (from k): profile, fans, blocking of the owner. ARGV (from a): viewer ('' when
# anonymous), the profile setting that hides the list: hideFollowing, hideFans, or any other
# value for a list both hide (the mutual list shows members of both).
_HIDDEN = source("parts/hidden")

# KEYS: profile, fans, blocking of the owner   ARGV: viewer, setting   Returns 1 when hidden. Reads only.
HIDDEN = _HIDDEN + source("hidden")

# A keyset page of a sorted set in newest-first order: score descending, ties by member
# descending (Redis' own ZREVRANGE order). Reads only.
# KEYS: zset [profile, fans, blocking of its owner]
# ARGV: mode ('first' | 'last'), has cursor ('1' | '0'), cursor score, cursor member, limit
#       [viewer, setting]: with the owner's keys, the page of a viewer who is not the owner
# Returns {total, start, end, rows, hidden}: rows are ranks [start, end) as member, score pairs.
PAGE = _HIDDEN + source("page")


FOLLOW_SCRIPT = LuaScript(FOLLOW)
FOLLOW_OUT_SCRIPT = LuaScript(FOLLOW_OUT)
FOLLOW_IN_SCRIPT = LuaScript(FOLLOW_IN)
UNFOLLOW_SCRIPT = LuaScript(UNFOLLOW)
UNFOLLOW_OUT_SCRIPT = LuaScript(UNFOLLOW_OUT)
UNFOLLOW_IN_SCRIPT = LuaScript(UNFOLLOW_IN)
UNFOLLOW_KEPT_SCRIPT = LuaScript(UNFOLLOW_KEPT)
UPSERT_USER_SCRIPT = LuaScript(UPSERT_USER)
MARK_FANS_SEEN_SCRIPT = LuaScript(MARK_FANS_SEEN)
NEW_FANS_COUNT_SCRIPT = LuaScript(NEW_FANS_COUNT)
PAGE_SCRIPT = LuaScript(PAGE)
HIDDEN_SCRIPT = LuaScript(HIDDEN)
PROFILES_SCRIPT = LuaScript(PROFILES)
# One profile, as PROFILES reads it: a plain HMGET costs Redis a fraction of a script call.
PROFILE_READ = ReadCommand("HMGET", *PROFILE_FIELDS)
# The profiles of a page's users, an HMGET each, where the read channel keeps them until Redis says
# one changed (store/redis/tracking.py: a profile changes rarely, so a hot page's cost Redis
# nothing), and on a cluster, where they sit in up to 20 slots (a script call per slot would cost
# Redis several times that). Without a channel that keeps them, one Redis reads them with PROFILES.
PROFILE_READS = KeyedRead(PROFILE_READ, cacheable=True)
# When the viewer followed each user (a ZMSCORE of the viewer's following set) or each followed the
# viewer (of its fans set), None for no follow: plain commands on the viewer's slot. A script
# running both cost Redis more than the two commands together, handing their replies through Lua.
RELATION_READ = ReadCommand("ZMSCORE")
COUNTS_SCRIPT = LuaScript(COUNTS)
CONTROLS_SCRIPT = LuaScript(CONTROLS)
