"""Every Redis key name of the follow graph. No other module spells a key.

All keys of one user share the hash tag `{u:ID}`, so they live in one Redis Cluster slot and a
script or pipeline touching only one user's keys is a single-slot operation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

DEFAULT_PREFIX = "fg:"
# A user's sorted sets of users, by name (store.model.ListKind's values, and blocked_by).
_LISTS = frozenset(
    {
        "following",
        "fans",
        "mutual",
        "requests_in",
        "requests_out",
        "blocking",
        "blocked_by",
        "muting",
        "muted_by",
    }
)


# The change log's approximate cap per stream (XADD MAXLEN ~): entries beyond it are dropped even
# when a consumer has not read them (store.log says so loudly).
DEFAULT_LOG_CAP = 1_000_000


@cache
def slot_tags() -> tuple[str, ...]:
    """For each Redis Cluster slot, a short hash tag that lands on it (`e0`, `e1`, ... tried in
    turn): a slot's change log is named with it, so a user's script appends to the log on its own
    slot. About 0.1 s the first time; only a cluster asks."""
    tags: list[str | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
    missing, n = REDIS_CLUSTER_HASH_SLOTS, 0
    while missing:
        tag = f"e{n}"
        slot = key_slot(tag.encode())
        if tags[slot] is None:
            tags[slot] = tag
            missing -= 1
        n += 1
    return tuple(t for t in tags if t is not None)


@lru_cache(maxsize=1 << 16)
def _user_slot(user_id: str) -> int:
    # The slot of a key with a hash tag is the tag's (an id holds no brace: store/graph/ids.py): here
    # the tag {u:ID} of every user key of Keys, whatever the prefix.
    return key_slot(f"u:{user_id}".encode())


@lru_cache(maxsize=1 << 16)
def _slot_log(prefix: str, slot: int) -> str:
    return f"{prefix}{{{slot_tags()[slot]}}}:log"


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = DEFAULT_PREFIX
    # One change log per slot (Redis Cluster) instead of one for the whole graph.
    sharded: bool = False
    log_cap: int = DEFAULT_LOG_CAP

    # Every key of a user is `{prefix}{u:<id>}:<name>`, written out in each method rather than
    # built by a helper: a page makes some ten keys, and a call each would be ten more calls.

    def following(self, user_id: str) -> str:
        """Sorted set of the users `user_id` follows; score = follow time (epoch ms)."""
        return f"{self.prefix}{{u:{user_id}}}:following"

    def fans(self, user_id: str) -> str:
        """Sorted set of the users following `user_id`; score = their follow time (epoch ms)."""
        return f"{self.prefix}{{u:{user_id}}}:fans"

    def mutual(self, user_id: str) -> str:
        """Sorted set of the users `user_id` follows who follow back; score = when it became mutual."""
        return f"{self.prefix}{{u:{user_id}}}:mutual"

    def profile(self, user_id: str) -> str:
        """Hash of name, avatarUrl, createdAt and the settings (locked, hideFollowing, hideFans: "1"
        when on); its existence means the user is registered."""
        return f"{self.prefix}{{u:{user_id}}}:profile"

    def profiles(self, user_ids: Iterable[str]) -> list[str]:
        """`profile` of each user (a page's users: one comprehension rather than a call each)."""
        prefix = self.prefix
        return [f"{prefix}{{u:{user_id}}}:profile" for user_id in user_ids]

    def blocking(self, user_id: str) -> str:
        """Sorted set of the users `user_id` blocks; score = when."""
        return f"{self.prefix}{{u:{user_id}}}:blocking"

    def blocked_by(self, user_id: str) -> str:
        """Sorted set of the users who block `user_id` (the mirror of their `blocking`, so that a
        check of either direction runs on one user's slot); score = when."""
        return f"{self.prefix}{{u:{user_id}}}:blocked_by"

    def muting(self, user_id: str) -> str:
        """Sorted set of the users `user_id` mutes; score = when."""
        return f"{self.prefix}{{u:{user_id}}}:muting"

    def requests_in(self, user_id: str) -> str:
        """Sorted set of the users waiting for `user_id` (a locked account) to accept their follow;
        score = when they asked."""
        return f"{self.prefix}{{u:{user_id}}}:requests_in"

    def requests_out(self, user_id: str) -> str:
        """Sorted set of the locked accounts `user_id` asked to follow, still pending (the source of
        truth of a request, as `following` is of a follow); score = when."""
        return f"{self.prefix}{{u:{user_id}}}:requests_out"

    def account(self, user_id: str) -> str:
        """Hash of a user whose account is off (store/graph/lifecycle.py): the profile's fields,
        renamed from `profile` so that every script and read finds no such user, with `state`
        (DEACTIVATED, SUSPENDED or DELETING), `stateAt` and `stateReason`."""
        return f"{self.prefix}{{u:{user_id}}}:account"

    def muted_by(self, user_id: str) -> str:
        """Sorted set of the users who mute `user_id` (the mirror of their `muting`, so that a
        deletion finds them); score = when."""
        return f"{self.prefix}{{u:{user_id}}}:muted_by"

    def kept_by(self, user_id: str) -> str:
        """Set of the users whose account is off and whose own sets keep a follow with `user_id`
        that `user_id`'s sets no longer show: what a deletion of `user_id` must also clear."""
        return f"{self.prefix}{{u:{user_id}}}:kept_by"

    def kept_with(self, user_id: str) -> str:
        """Set of the users whose `kept_by` may name `user_id` (while `user_id`'s account is off):
        whom a reactivation or a deletion of `user_id` visits."""
        return f"{self.prefix}{{u:{user_id}}}:kept_with"

    def lifecycle_jobs(self) -> str:
        """Set of the users whose deactivation, reactivation or deletion is under way in batches:
        read at a server's start to take up what a restart cut short. One key, outside the graph's."""
        return f"{self.prefix}lifecycle"

    def fans_seen(self, user_id: str) -> str:
        """String: epoch ms of the user's last markFansSeen."""
        return f"{self.prefix}{{u:{user_id}}}:fans_seen"

    def of_list(self, name: str, user_id: str) -> str:
        """One of a user's sorted sets of users, by its name (a ListKind value, or blocked_by)."""
        if name not in _LISTS:
            raise ValueError(f"no list {name!r}")
        return f"{self.prefix}{{u:{user_id}}}:{name}"

    def log(self, user_id: str) -> str:
        """The stream of the change log that `user_id`'s changes are appended to: the one stream
        of a single Redis, or the stream of the user's slot on a cluster."""
        if not self.sharded:
            return f"{self.prefix}log"
        return self.slot_log(self.slot(user_id))

    def slot_log(self, slot: int) -> str:
        """The change log of one Redis Cluster slot."""
        return _slot_log(self.prefix, slot)

    def logs(self) -> list[str]:
        """Every stream of the change log."""
        if not self.sharded:
            return [f"{self.prefix}log"]
        return [self.slot_log(slot) for slot in range(REDIS_CLUSTER_HASH_SLOTS)]

    def slot(self, user_id: str) -> int:
        """The Redis Cluster slot holding every key of `user_id`."""
        return _user_slot(user_id)

    def replicated(self, slot: int | None = None) -> str:
        """String set after the writes that wait for replicas, so that their WAIT covers
        everything the primary did before (store/redis/replicas.py): one key on a single Redis,
        one of `slot` on a cluster, where the node that took the write must take it too."""
        if slot is None:
            return f"{self.prefix}replicated"
        return f"{self.prefix}{{{slot_tags()[slot]}}}:replicated"

    def persisted_query(self, digest: str) -> str:
        """String: the GraphQL document whose SHA-256 is `digest` (transport/persisted.py)."""
        return f"{self.prefix}apq:{digest}"

    def import_job(self, user_id: str) -> str:
        """Hash of the user's latest list import (transport/account.py): its state and counts."""
        return f"{self.prefix}{{u:{user_id}}}:import"

    def search_doc(self, user_id: str) -> str:
        """Hash of what the search index holds for `user_id` (store/graph/search_index.py): `w`, the
        indexed words of the name, space-separated; `s`, the score they were indexed with."""
        return f"{self.prefix}{{u:{user_id}}}:search"

    def search_prefix(self, prefix: str) -> str:
        """Sorted set of the users a word of whose name starts with `prefix` (folded, see
        store/graph/search.py); score = their fans count as last indexed. A hash tag of its own
        per prefix: on a cluster the index spreads over the slots."""
        return f"{self.prefix}{{s:{prefix}}}"

    def search_id(self, folded_id: str) -> str:
        """Sorted set of the users whose id, case folded, is `folded_id`; scored as search_prefix."""
        return f"{self.prefix}{{i:{folded_id}}}"

    def search_built(self) -> str:
        """String: set once the search index was built from every user (server/search.py)."""
        return f"{self.prefix}search:built"

    def search_lease(self) -> str:
        """String: held by the process building the search index while it builds (server/search.py)."""
        return f"{self.search_built()}:lease"

    def rate_limit_prefix(self) -> str:
        """Prefix of the rate limiter's keys (one per limited user and action)."""
        return f"{self.prefix}limits"

    def follow_limit(self, user_id: str) -> str:
        """The times of `user_id`'s latest follows (the follow rate limit's window): on the user's
        slot, outside the graph's keys (`pattern()` does not match it)."""
        return f"{self.rate_limit_prefix()}{{u:{user_id}}}:follow"

    def accepting(self) -> str:
        """Set of the users whose pending requests an unlock is accepting: added before the
        unlock, removed when the acceptance ends (store.controls), read at a server's start to
        take up what a restart or a crash cut short. One key, outside the graph's."""
        return f"{self.prefix}accepting"

    def user_key_layout(self, names: Iterable[str]) -> list[str]:
        """The keys `names` of any user as a script builds them for many users at once: the text
        before the user id, then the text after it of each name (the methods above, split at the id)."""
        parts = [getattr(self, name)("\0").split("\0") for name in names]
        return [parts[0][0], *(after for _, after in parts)]

    def import_checkpoint(self, source: str) -> str:
        """Hash of how far the import of `source` (a digest naming a file or a query) has come:
        the offset and line after its last batch written, with a checksum of what came before
        (cli/checkpoints.py). One key, outside the graph's."""
        return f"{self.prefix}import:{source}"

    def pattern(self, suffix: str = "*") -> str:
        """A SCAN pattern matching every user's key ending in `suffix` (all keys of the graph by default)."""
        return f"{self._escaped_prefix()}{{u:*}}:{suffix}"

    def log_pattern(self) -> str:
        """A SCAN pattern matching the change log's streams of the slots (`slot_log`)."""
        return f"{self._escaped_prefix()}{{e*}}:log"

    def _escaped_prefix(self) -> str:
        return "".join("\\" + c if c in "*?[]\\" else c for c in self.prefix)

    def user_of(self, key: str) -> str:
        """The user id inside one of this module's keys."""
        start = len(self.prefix) + len("{u:")
        return key[start : key.index("}", start)]
