"""Users' facts as the read replies hold them: a column per field, or an object per user.

A page of 20 fans needs the name and the relationship of 20 users. Built as objects, that is a
UserFacts, a Profile and a Relation per user, and a getter call per field and user to read them
back. `UserColumns` keeps the replies of one read (store.graph.FollowStore.columns) and gives
each field as one list for all the users: the slices and comprehensions of a column run in C or
in one Python loop, and a compiled plan zips the columns it selects into the response. `facts()`
builds the objects from the same replies for the code that wants them; both forms read the
replies here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from followgraph.store.graph import scripts
from followgraph.store.graph.model import (
    DEFAULT_SETTINGS,
    NO_CONTROLS,
    NO_RELATION,
    Controls,
    Counts,
    Profile,
    Relation,
    Relationship,
    UserFacts,
    UserSettings,
    is_set,
)

PROFILE_WIDTH = len(scripts.PROFILE_FIELDS)
_NAME = scripts.PROFILE_FIELDS.index("name")
_AVATAR_URL = scripts.PROFILE_FIELDS.index("avatarUrl")
_CREATED_AT = scripts.PROFILE_FIELDS.index("createdAt")
_LOCKED = scripts.PROFILE_FIELDS.index("locked")
CONTROL_FLAGS = 5
COUNT_WIDTH = 3


def time_of(value: Any) -> int | None:
    """One score as epoch ms (read as times_of reads them), None for a missing one."""
    if value is None or value is False:
        return None
    try:
        return int(value)
    except ValueError:
        return int(float(value))


def times_of(scores: list[str]) -> list[int]:
    """Scores as epoch ms. Redis writes whole scores as integers ("1700000000000"), which int()
    reads at a third of int(float())'s cost; anything else is read as a float."""
    try:
        return list(map(int, scores))
    except ValueError:
        return [int(float(score)) for score in scores]


# The relationship by (viewer follows, follows viewer).
_RELATIONSHIPS = {
    (follows, followed): Relationship.of(viewer_follows=follows, follows_viewer=followed)
    for follows in (False, True)
    for followed in (False, True)
}
_SELF = Relation(Relationship.SELF)


class UserColumns:
    """The facts read of `user_ids`, seen by `viewer`: each part is None when it was not read.

    - `profiles`: the HMGET values of scripts.PROFILE_FIELDS, PROFILE_WIDTH a user, flat;
    - `relations`: when the viewer followed each user and when each followed the viewer (scores,
      as strings or, through redis-py, numbers; None for no follow);
    - `counts`: following, fans and mutual counts, COUNT_WIDTH a user, flat;
    - `controls`: CONTROL_FLAGS lists of a flag per user (scripts.CONTROLS_SCRIPT's reply).

    Each part is checked against the ids here, so a short reply fails rather than cuts the page.
    The parts may hold more users than `user_ids`, which are the last of them (`split_first`).
    """

    __slots__ = ("_start", "controls", "counts", "profiles", "relations", "user_ids", "viewer")

    def __init__(
        self,
        viewer: str | None,
        user_ids: list[str],
        *,
        profiles: list[Any] | None = None,
        relations: Sequence[list[Any]] | None = None,
        counts: list[int] | None = None,
        controls: Sequence[list[Any]] | None = None,
    ) -> None:
        n = len(user_ids)
        _check("profile values", profiles, n * PROFILE_WIDTH)
        if relations is not None:
            _check("relation replies", relations, 2)
            for reply in relations:
                _check("relation scores", reply, n)
        _check("counts", counts, n * COUNT_WIDTH)
        if controls is not None:
            _check("control replies", controls, CONTROL_FLAGS)
            for flags in controls:
                _check("control flags", flags, n)
        self.viewer = viewer
        self.user_ids = user_ids
        self.profiles = profiles
        self.relations = relations
        self.counts = counts
        self.controls = controls
        # The index in the parts of the first of user_ids.
        self._start = 0

    @classmethod
    def of_replies(
        cls,
        viewer: str | None,
        user_ids: list[str],
        groups: list[list[str]],
        replies: list[Any],
        *,
        profile: bool,
        relation: bool,
        counts: bool,
        controls: bool,
    ) -> UserColumns:
        """The columns from the replies of store.graph's facts calls, in their order: the
        profiles (one flat reply for all users), the relations (the viewer's following, then its
        fans), the counts (a reply per group of `groups`, the users by cluster slot), the controls."""
        profiles = replies[0] if profile else None
        rest = replies[1:] if profile else replies[:]
        relations = [rest.pop(0), rest.pop(0)] if relation else None
        flags = rest.pop() if controls else None
        all_counts = _gather(user_ids, groups, rest, COUNT_WIDTH) if counts else None
        return cls(
            viewer, user_ids, profiles=profiles, relations=relations, counts=all_counts, controls=flags
        )

    def __len__(self) -> int:
        return len(self.user_ids)

    def split_first(self) -> tuple[UserFacts, UserColumns]:
        """The first user's facts, and the columns of the others (the same replies, unchecked
        again and not copied)."""
        first = self._one(self._start)
        rest = object.__new__(UserColumns)
        rest.viewer, rest.user_ids = self.viewer, self.user_ids[1:]
        rest.profiles, rest.relations, rest.counts, rest.controls = (
            self.profiles,
            self.relations,
            self.counts,
            self.controls,
        )
        rest._start = self._start + 1
        return first, rest

    # -- columns --------------------------------------------------------------------------------
    # Each is a new list of one value per user, as the objects of facts() hold it.

    def _profile_field(self, index: int) -> list[Any]:
        """A profile field of each user; None for a user without a profile (no createdAt)."""
        values: list[Any] = self._profile_values(index)
        created = self._profile_values(_CREATED_AT)
        if None in created:
            return [None if at is None else v for v, at in zip(values, created, strict=True)]
        return values

    def _profile_values(self, index: int) -> list[Any]:
        """A profile field of each user as Redis replied it."""
        if self.profiles is None:
            raise ValueError("the profiles were not read")
        return self.profiles[self._start * PROFILE_WIDTH + index :: PROFILE_WIDTH]

    def _relation_scores(self) -> tuple[list[Any], list[Any]] | None:
        """When the viewer followed each user, and when each followed the viewer."""
        if self.relations is None:
            return None
        followed_at, fan_at = self.relations
        start = self._start
        return (followed_at[start:], fan_at[start:]) if start else (followed_at, fan_at)

    @property
    def names(self) -> list[str | None]:
        return self._profile_field(_NAME)

    @property
    def avatar_urls(self) -> list[str | None]:
        return self._profile_field(_AVATAR_URL)

    @property
    def created_ats(self) -> list[int | None]:
        return [None if at is None else int(at) for at in self._profile_values(_CREATED_AT)]

    @property
    def locked(self) -> list[bool]:
        return [
            at is not None and is_set(flag)
            for at, flag in zip(self._profile_values(_CREATED_AT), self._profile_values(_LOCKED), strict=True)
        ]

    @property
    def relationships(self) -> list[Relationship]:
        scores = self._relation_scores()
        if scores is None:
            return [Relationship.NONE] * len(self.user_ids)
        viewer, table = self.viewer, _RELATIONSHIPS
        return [
            Relationship.SELF if user_id == viewer else table[out is not None, back is not None]
            for user_id, out, back in zip(self.user_ids, *scores, strict=True)
        ]

    @property
    def viewer_followed_ats(self) -> list[int | None]:
        return self._relation_times(0)

    @property
    def followed_viewer_ats(self) -> list[int | None]:
        return self._relation_times(1)

    def _relation_times(self, which: int) -> list[int | None]:
        scores = self._relation_scores()
        if scores is None:
            return [None] * len(self.user_ids)
        viewer = self.viewer
        return [
            None if user_id == viewer else time_of(score)
            for user_id, score in zip(self.user_ids, scores[which], strict=True)
        ]

    # -- objects --------------------------------------------------------------------------------

    def facts(self) -> list[UserFacts]:
        """A UserFacts per user, with the parts that were read."""
        return self._facts(self._start, self._start + len(self.user_ids))

    def _one(self, index: int) -> UserFacts:
        """The UserFacts of the user at `index` of the parts: what _facts builds for one user,
        without a list per part (a compiled plan's root user, once a request)."""
        user_id = self.user_ids[index - self._start]
        profile = None
        if self.profiles is not None:
            at = index * PROFILE_WIDTH
            profile = profile_of(user_id, *self.profiles[at : at + PROFILE_WIDTH])
        relation = NO_RELATION
        if self.relations is not None:
            scores = [[reply[index]] for reply in self.relations]
            [relation] = _relation_objects(self.viewer, [user_id], scores)
        counts = None
        if self.counts is not None:
            [counts] = _count_objects(self.counts[index * COUNT_WIDTH : (index + 1) * COUNT_WIDTH])
        controls = NO_CONTROLS
        if self.controls is not None:
            [controls] = _control_objects([flags[index : index + 1] for flags in self.controls])
        return UserFacts(user_id, profile, relation, counts, controls)

    def _facts(self, start: int, stop: int) -> list[UserFacts]:
        """The UserFacts of the users from index `start` to `stop` of the parts."""
        ids = self.user_ids[start - self._start : stop - self._start]
        n = len(ids)
        profiles: list[Any] = [None] * n
        if self.profiles is not None:
            profiles = _profile_objects(ids, self.profiles[start * PROFILE_WIDTH : stop * PROFILE_WIDTH])
        relations = [NO_RELATION] * n
        if self.relations is not None:
            relations = _relation_objects(self.viewer, ids, [reply[start:stop] for reply in self.relations])
        counts: list[Any] = [None] * n
        if self.counts is not None:
            counts = _count_objects(self.counts[start * COUNT_WIDTH : stop * COUNT_WIDTH])
        controls = [NO_CONTROLS] * n
        if self.controls is not None:
            controls = _control_objects([flags[start:stop] for flags in self.controls])
        return list(map(UserFacts, ids, profiles, relations, counts, controls))


def _check(what: str, reply: Sequence[Any] | None, expected: int) -> None:
    if reply is not None and len(reply) != expected:
        raise ValueError(f"{expected} {what} expected, got {len(reply)}")


def _gather(ids: list[str], groups: list[list[str]], replies: list[list[Any]], width: int) -> list[Any]:
    """Flat per-group replies of `width` values per user, put back in the order of `ids`."""
    if len(groups) == 1:
        return replies[0]
    by_user = {
        user_id: reply[i * width : (i + 1) * width]
        for group, reply in zip(groups, replies, strict=True)
        for i, user_id in enumerate(group)
    }
    return [value for user_id in ids for value in by_user[user_id]]


def _profile_objects(ids: list[str], flat: list[Any]) -> list[Profile | None]:
    # The HMGET replies of PROFILE_FIELDS, a user's values at a time.
    values = zip(*[iter(flat)] * PROFILE_WIDTH, strict=True)
    return [profile_of(user_id, *fields) for user_id, fields in zip(ids, values, strict=True)]


def profile_of(
    user_id: str,
    name: Any,
    avatar_url: Any,
    created_at: Any,
    locked: Any,
    hide_following: Any,
    hide_fans: Any,
) -> Profile | None:
    """A user's Profile from its PROFILE_FIELDS values; None without one (no createdAt)."""
    if created_at is None:
        return None
    # Most users keep the default settings: shared, not built again.
    settings = DEFAULT_SETTINGS
    if locked or hide_following or hide_fans:
        settings = UserSettings.read(locked, hide_following, hide_fans)
    return Profile(user_id, name, avatar_url, int(created_at), settings)


def _relation_objects(viewer: str | None, ids: list[str], reply: Sequence[list[Any]]) -> list[Relation]:
    followed_at, fan_at = reply
    relations = []
    for user_id, out, back in zip(ids, followed_at, fan_at, strict=True):
        # The two relations without times are shared: nothing changes a Relation once built.
        if user_id == viewer:
            relations.append(_SELF)
        elif out is None and back is None:
            relations.append(NO_RELATION)
        else:
            relationship = _RELATIONSHIPS[out is not None, back is not None]
            relations.append(Relation(relationship, time_of(out), time_of(back)))
    return relations


def _control_objects(reply: Sequence[list[Any]]) -> list[Controls]:
    return [
        NO_CONTROLS if not any(flags) else Controls(*(flag is not None for flag in flags))
        for flags in zip(*reply, strict=True)
    ]


def _count_objects(n: list[int]) -> list[Counts]:
    return [Counts(n[i], n[i + 1], n[i + 2]) for i in range(0, len(n), COUNT_WIDTH)]
