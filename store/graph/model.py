"""Plain values the store returns. Times are epoch milliseconds, as Redis TIME gives them.

The values built for every entry of a page (Entry, Profile, Relation, Counts, UserFacts)
are slotted dataclasses that are not frozen: a frozen dataclass's constructor sets each field
through object.__setattr__ and costs about five times as much, some 7 µs per entry of a page.
Nothing changes them once the store has returned them, the shared defaults included.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple

# The last millisecond of year 9999: the latest time an ISO-8601 DateTime can show.
MAX_TIME = 253_402_300_799_999


class Relationship(enum.Enum):
    """How a user relates to a viewer."""

    SELF = "SELF"
    MUTUAL = "MUTUAL"
    FOLLOWING = "FOLLOWING"
    FOLLOWED_BY = "FOLLOWED_BY"
    NONE = "NONE"

    # Members are singletons compared by identity: hashed by identity too, in C, rather than by
    # Enum's Python-level hash of the name (a page looks relationships up some 60 times).
    __hash__ = object.__hash__

    @classmethod
    def of(cls, *, viewer_follows: bool, follows_viewer: bool) -> Relationship:
        if viewer_follows:
            return cls.MUTUAL if follows_viewer else cls.FOLLOWING
        return cls.FOLLOWED_BY if follows_viewer else cls.NONE


class ListKind(enum.Enum):
    """The per-user lists kept as sorted sets."""

    FOLLOWING = "following"
    FANS = "fans"
    MUTUAL = "mutual"
    # Seen only by their owner:
    REQUESTS_IN = "requests_in"
    REQUESTS_OUT = "requests_out"
    BLOCKING = "blocking"
    MUTING = "muting"

    # Hashed by identity, as Relationship is: a page looks its kind up in _HIDDEN_BY.
    __hash__ = object.__hash__

    @property
    def public(self) -> bool:
        """Whether others may page it (as far as the owner's settings allow)."""
        return self in _HIDDEN_BY

    @property
    def hidden_by(self) -> str:
        """The profile setting that hides it from others, as the page script reads it: the mutual
        list shows whom the owner follows and who follows the owner, so either setting hides it."""
        return _HIDDEN_BY[self]


_HIDDEN_BY = {
    ListKind.FOLLOWING: "hideFollowing",
    ListKind.FANS: "hideFans",
    ListKind.MUTUAL: "hideFollowingOrFans",
}


@dataclass(frozen=True, slots=True)
class UserSettings:
    """Who may see what of a user's lists, and whether follows need the user's approval."""

    locked: bool = False
    hide_following: bool = False
    hide_fans: bool = False

    @classmethod
    def read(cls, locked: object, hide_following: object, hide_fans: object) -> UserSettings:
        """The settings from the profile hash's flags as Redis replies them (see `is_set`)."""
        return cls(is_set(locked), is_set(hide_following), is_set(hide_fans))


def is_set(flag: object) -> bool:
    """Whether a flag of the profile hash, as Redis replies it, is set: "1" is; anything else, a
    missing field included, is not."""
    return flag == "1"


DEFAULT_SETTINGS = UserSettings()


@dataclass(slots=True)
class Profile:
    user_id: str
    name: str | None
    avatar_url: str | None
    created_at: int
    settings: UserSettings = DEFAULT_SETTINGS
    # Where the account stands (lifecycle.AccountState's value): not ACTIVE only in the views of
    # the user and of admins, which read an account that is off (FollowStore.accounts).
    account_state: str = "ACTIVE"


@dataclass(slots=True)
class Relation:
    """A user seen from a viewer: the relationship and the follow times behind it."""

    relationship: Relationship
    viewer_followed_at: int | None = None
    followed_viewer_at: int | None = None

    @property
    def viewer_follows(self) -> bool:
        return self.viewer_followed_at is not None

    @property
    def follows_viewer(self) -> bool:
        return self.followed_viewer_at is not None


@dataclass(frozen=True, slots=True)
class Controls:
    """Blocks, mutes and pending follow requests between a user and a viewer."""

    viewer_blocks: bool = False
    blocks_viewer: bool = False
    viewer_mutes: bool = False
    viewer_requested: bool = False
    requested_viewer: bool = False


NO_CONTROLS = Controls()
NO_RELATION = Relation(Relationship.NONE)


@dataclass(slots=True)
class Counts:
    following: int
    fans: int
    mutual: int


@dataclass(frozen=True, slots=True)
class Parts:
    """Which parts of users' facts to load; each costs part of a round trip."""

    profile: bool = False
    relation: bool = False
    counts: bool = False
    controls: bool = False

    def __or__(self, other: Parts) -> Parts:
        return Parts(
            self.profile or other.profile,
            self.relation or other.relation,
            self.counts or other.counts,
            self.controls or other.controls,
        )

    @property
    def any(self) -> bool:
        return self.profile or self.relation or self.counts or self.controls


@dataclass(slots=True)
class UserFacts:
    """What a response needs of a user: each part is loaded only when asked for."""

    user_id: str
    profile: Profile | None = None
    relation: Relation = field(default_factory=lambda: NO_RELATION)
    counts: Counts | None = None
    controls: Controls = NO_CONTROLS


@dataclass(frozen=True, slots=True)
class FollowResult:
    """Outcome of follow / unfollow / remove_fan, seen from the acting user."""

    changed: bool
    relationship: Relationship
    # The follow became a request that waits for the other user's answer (a locked account).
    pending: bool = False


@dataclass(slots=True)
class Entry:
    """One member of a list page: who, the list's time for them, and the cursor just after them."""

    user_id: str
    at: int
    cursor: str


class Page(NamedTuple):
    """A page of a list in columns: the i-th entry is members[i], followed (or added) at times[i],
    with cursors[i] just after it. Compiled plans read the columns; `entries` builds the rows for
    the code that wants one object an entry. (A named tuple, as store.graph.ListQuery is, for what
    it costs to make: one a page.)"""

    members: list[str]
    times: list[int]
    cursors: list[str]
    total: int
    has_next: bool
    has_previous: bool
    # The owner does not show the list to the viewer: no entries, no pages, only the total.
    hidden: bool = False

    @classmethod
    def hidden_list(cls, total: int) -> Page:
        """What a viewer the owner hides the list from gets: its size, nothing more."""
        return cls([], [], [], total, has_next=False, has_previous=False, hidden=True)

    @property
    def entries(self) -> list[Entry]:
        return list(map(Entry, self.members, self.times, self.cursors))

    @property
    def start_cursor(self) -> str | None:
        return self.cursors[0] if self.cursors else None

    @property
    def end_cursor(self) -> str | None:
        return self.cursors[-1] if self.cursors else None
