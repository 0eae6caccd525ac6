"""The follow graph on Redis: users, follows and every read the API needs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from store import scripts
from store.errors import CannotFollowSelfError, InvalidInputError, UserNotFoundError
from store.ids import validate_user_id, validate_user_ids
from store.keys import Keys
from store.lua import ScriptCall, run_pipeline, run_scripts
from store.model import (
    MAX_TIME,
    NO_RELATION,
    Counts,
    FollowResult,
    ListKind,
    Page,
    Profile,
    Relation,
    Relationship,
    UserFacts,
)
from store.paging import Direction, PageRequest, build_page, window
from store.profiles import validate_avatar_url, validate_name

DEFAULT_PAGE_SIZE = 20
# Members fetched per round trip when a list is intersected with another.
INTERSECTION_CHUNK = 5000


def follow_keys(k: Keys, follower: str, followee: str) -> list[str]:
    """The keys the FOLLOW script touches, in its order."""
    return [
        k.profile(follower), k.profile(followee),
        k.following(follower), k.fans(follower), k.mutual(follower),
        k.fans(followee), k.following(followee), k.mutual(followee),
    ]  # fmt: skip


def upsert_args(name: str | None, avatar_url: str | None, created_at: int | None) -> list[str]:
    """The UPSERT_USER script's arguments for fields that are already valid."""
    args = ["" if created_at is None else str(created_at)]
    if name is not None:
        args += ["name", name]
    if avatar_url is not None:
        args += ["avatarUrl", avatar_url]
    return args


@dataclass(frozen=True, slots=True)
class ListQuery:
    """A validated request for one page of one user's list."""

    kind: ListKind
    user_id: str
    request: PageRequest

    @property
    def list_id(self) -> str:
        return f"{self.kind.value}:{self.user_id}"


def _time(value: Any) -> int | None:
    return None if value is None or value is False else int(float(value))


class FollowStore:
    """Async access to the follow graph. The client must be created with decode_responses=True."""

    def __init__(self, redis: Redis, *, keys: Keys | None = None) -> None:
        self.redis = redis
        self.keys = keys or Keys()

    # -- users ----------------------------------------------------------------------------------

    async def upsert_user(
        self,
        user_id: str,
        *,
        name: str | None = None,
        avatar_url: str | None = None,
        created_at: int | None = None,
    ) -> tuple[Profile, bool]:
        """Register `user_id` or update the fields given; returns the profile and whether it is new."""
        validate_user_id(user_id)
        name = None if name is None else validate_name(name)
        avatar_url = None if avatar_url is None else validate_avatar_url(avatar_url)
        if created_at is not None and not 0 <= created_at <= MAX_TIME:
            raise InvalidInputError(
                "createdAt must be an epoch time in ms from 1970 to 9999.", field="createdAt"
            )
        args = upsert_args(name, avatar_url, created_at)
        created, stored_name, stored_avatar, stored_created = await scripts.UPSERT_USER_SCRIPT.run(
            self.redis, [self.keys.profile(user_id)], args
        )
        profile = Profile(user_id, stored_name or None, stored_avatar or None, int(stored_created))
        return profile, bool(created)

    async def profiles(self, user_ids: Sequence[str]) -> list[Profile | None]:
        """Each user's profile, None for an unregistered one; one round trip."""
        facts = await self.user_facts(None, user_ids, profile=True, relation=False, counts=False)
        return [f.profile for f in facts]

    async def registered(self, user_ids: Sequence[str]) -> list[bool]:
        ids = validate_user_ids(user_ids)

        def fill(pipe: Pipeline) -> None:
            for user_id in ids:
                pipe.exists(self.keys.profile(user_id))

        return [bool(n) for n in await run_pipeline(self.redis, fill)] if ids else []

    # -- writes ---------------------------------------------------------------------------------

    async def follow(self, *, follower: str, followee: str, at: int | None = None) -> FollowResult:
        """`follower` follows `followee`; idempotent. `at` (epoch ms) keeps an imported follow's time."""
        self._check_pair(follower, followee)
        if at is not None and not 0 <= at <= MAX_TIME:
            raise InvalidInputError(
                "A follow time must be an epoch time in ms from 1970 to 9999.", field="at"
            )
        keys = follow_keys(self.keys, follower, followee)
        args = [follower, followee, "" if at is None else str(at)]
        status, changed, _, back = await scripts.FOLLOW_SCRIPT.run(self.redis, keys, args)
        self._check_status(status, follower, followee)
        follows_back = back is not None
        return FollowResult(bool(changed), Relationship.of(viewer_follows=True, follows_viewer=follows_back))

    async def unfollow(self, *, follower: str, followee: str) -> FollowResult:
        """`follower` stops following `followee`; idempotent. The relationship is follower's view."""
        self._check_pair(follower, followee, self_message="A user cannot unfollow themselves.")
        k = self.keys
        keys = [
            k.profile(follower), k.profile(followee),
            k.following(follower), k.mutual(follower),
            k.fans(followee), k.mutual(followee),
            k.fans(follower),
        ]  # fmt: skip
        status, changed, back = await scripts.UNFOLLOW_SCRIPT.run(self.redis, keys, [follower, followee])
        self._check_status(status, follower, followee)
        return FollowResult(
            bool(changed), Relationship.of(viewer_follows=False, follows_viewer=back is not None)
        )

    async def remove_fan(self, *, user: str, fan: str) -> FollowResult:
        """Make `fan` stop following `user`. The relationship is `user`'s view of `fan` afterwards."""
        self._check_pair(user, fan, self_message="A user cannot be their own fan.")
        result = await self.unfollow(follower=fan, followee=user)
        # unfollow answered from the fan's side: whether `user` still follows the fan.
        user_follows_fan = result.relationship is Relationship.FOLLOWED_BY
        return FollowResult(
            result.changed, Relationship.of(viewer_follows=user_follows_fan, follows_viewer=False)
        )

    async def mark_fans_seen(self, user_id: str) -> int:
        """Set the mark newFansCount counts from; returns it (epoch ms). The user must be registered."""
        validate_user_id(user_id)
        keys = [self.keys.fans_seen(user_id), self.keys.profile(user_id)]
        seen = int(await scripts.MARK_FANS_SEEN_SCRIPT.run(self.redis, keys))
        if seen < 0:
            raise UserNotFoundError(user_id)
        return seen

    @staticmethod
    def _check_pair(a: str, b: str, *, self_message: str = "A user cannot follow themselves.") -> None:
        validate_user_id(a)
        validate_user_id(b)
        if a == b:
            raise CannotFollowSelfError(self_message)

    @staticmethod
    def _check_status(status: int, a: str, b: str) -> None:
        if status == -1:
            raise UserNotFoundError(a)
        if status == -2:
            raise UserNotFoundError(b)

    # -- reads: lists ---------------------------------------------------------------------------

    def list_query(
        self,
        kind: ListKind,
        user_id: str,
        *,
        first: int | None = None,
        after: str | None = None,
        last: int | None = None,
        before: str | None = None,
        default: int = DEFAULT_PAGE_SIZE,
    ) -> ListQuery:
        """Validate the arguments of a page of `user_id`'s list (cursors included) without I/O."""
        validate_user_id(user_id)
        list_id = ListQuery(kind, user_id, PageRequest(Direction.FORWARD, 0, None)).list_id
        request = PageRequest.parse(
            list_id, first=first, after=after, last=last, before=before, default=default
        )
        return ListQuery(kind, user_id, request)

    def _list_key(self, query: ListQuery) -> str:
        match query.kind:
            case ListKind.FOLLOWING:
                return self.keys.following(query.user_id)
            case ListKind.FANS:
                return self.keys.fans(query.user_id)
            case ListKind.MUTUAL:
                return self.keys.mutual(query.user_id)

    async def pages(self, queries: Sequence[ListQuery]) -> list[Page]:
        """One page per query, all in one round trip."""
        if not queries:
            return []

        calls: list[ScriptCall] = [
            (scripts.PAGE_SCRIPT, [self._list_key(q)], _page_args(q.request)) for q in queries
        ]
        results = await run_scripts(self.redis, calls)
        pages = []
        for q, (total, start, stop, flat) in zip(queries, results, strict=True):
            rows = [(int(float(flat[i + 1])), flat[i]) for i in range(0, len(flat), 2)]
            pages.append(build_page(q.list_id, rows, total=int(total), start=int(start), stop=int(stop)))
        return pages

    async def page(self, kind: ListKind, user_id: str, **arguments: Any) -> Page:
        """One page of `user_id`'s list: first/after forward, last/before backward, newest first."""
        return (await self.pages([self.list_query(kind, user_id, **arguments)]))[0]

    async def common_following(
        self, user_id: str, other_id: str, *, first: int | None = None, after: str | None = None
    ) -> Page:
        """Users both follow, ordered by when `user_id` followed them, newest first."""
        validate_user_id(user_id)
        validate_user_id(other_id, field="otherUserId")
        list_id = f"common:{user_id}:{other_id}"
        request = PageRequest.parse(
            list_id, first=first, after=after, last=None, before=None, default=DEFAULT_PAGE_SIZE
        )
        entries = await self._intersection(self.keys.following(user_id), self.keys.following(other_id))
        return _slice(list_id, entries, request)

    async def fans_you_follow(
        self, viewer: str | None, user_id: str, *, first: int | None = None, after: str | None = None
    ) -> Page:
        """Fans of `user_id` whom `viewer` follows, newest fan first; empty for an anonymous viewer."""
        validate_user_id(user_id)
        list_id = f"fans-you-follow:{viewer or ''}:{user_id}"
        request = PageRequest.parse(
            list_id, first=first, after=after, last=None, before=None, default=DEFAULT_PAGE_SIZE
        )
        if viewer is None:
            return _slice(list_id, [], request)
        validate_user_id(viewer, field="viewer")
        entries = await self._intersection(self.keys.fans(user_id), self.keys.following(viewer))
        return _slice(list_id, entries, request)

    async def _intersection(self, ordered: str, other: str) -> list[tuple[int, str]]:
        """Members of both sorted sets, scored and sorted (newest first) as in `ordered`.

        Walks the smaller set in chunks and tests membership in the larger with ZMSCORE: reads
        only, and the two sets may live in different cluster slots.
        """

        def fill(pipe: Pipeline) -> None:
            pipe.zcard(ordered)
            pipe.zcard(other)

        sizes = await run_pipeline(self.redis, fill)
        walk_ordered = sizes[0] <= sizes[1]
        walked, probed = (ordered, other) if walk_ordered else (other, ordered)
        found: list[tuple[int, str]] = []
        for start in range(0, min(sizes), INTERSECTION_CHUNK):
            chunk = cast(
                "list[tuple[str, float]]",
                await self.redis.zrange(walked, start, start + INTERSECTION_CHUNK - 1, withscores=True),
            )
            if not chunk:
                break
            members = [member for member, _ in chunk]
            scores: list[float | None] = await self.redis.zmscore(probed, members)
            for (member, own), theirs in zip(chunk, scores, strict=True):
                if theirs is not None:
                    found.append((int(own if walk_ordered else theirs), member))
        found.sort(reverse=True)
        return found

    # -- reads: per-user facts, batched ---------------------------------------------------------

    async def relations(self, viewer: str | None, user_ids: Sequence[str]) -> list[Relation]:
        """How each user relates to `viewer`, with the follow times: one round trip for all of them."""
        facts = await self.user_facts(viewer, user_ids, profile=False, relation=True, counts=False)
        return [f.relation for f in facts]

    async def counts(self, user_ids: Sequence[str]) -> list[Counts]:
        """Following, fans and mutual counts of each user: one round trip for all of them."""
        facts = await self.user_facts(None, user_ids, profile=False, relation=False, counts=True)
        return [f.counts or Counts(0, 0, 0) for f in facts]

    async def user_facts(
        self, viewer: str | None, user_ids: Sequence[str], *, profile: bool, relation: bool, counts: bool
    ) -> list[UserFacts]:
        """The parts asked for of each user (profile, relation to `viewer`, counts): one round trip."""
        ids = validate_user_ids(user_ids)
        if viewer is not None:
            validate_user_id(viewer, field="viewer")
        relation = relation and viewer is not None
        calls: list[ScriptCall] = []
        if profile:
            calls.append((scripts.PROFILES_SCRIPT, self._profile_keys(ids), []))
        if relation and viewer is not None:
            calls.append((scripts.RELATIONS_SCRIPT, self._relation_keys(viewer), ids))
        if counts:
            calls.append((scripts.COUNTS_SCRIPT, self._count_keys(ids), []))
        reply = iter(await run_scripts(self.redis, calls) if ids else [])
        none: list[Any] = [None] * len(ids)
        profiles = _profiles(ids, next(reply)) if profile and ids else none
        relations = _relations(viewer, ids, next(reply)) if relation and ids else [NO_RELATION] * len(ids)
        all_counts: list[Counts | None] = list(_counts(next(reply))) if counts and ids else none
        return [
            UserFacts(u, p, r, c) for u, p, r, c in zip(ids, profiles, relations, all_counts, strict=True)
        ]

    def _profile_keys(self, ids: list[str]) -> list[str]:
        return [self.keys.profile(u) for u in ids]

    def _relation_keys(self, viewer: str) -> list[str]:
        return [self.keys.following(viewer), self.keys.fans(viewer)]

    def _count_keys(self, ids: list[str]) -> list[str]:
        k = self.keys
        return [key for u in ids for key in (k.following(u), k.fans(u), k.mutual(u))]

    async def new_fans_count(self, user_id: str) -> int:
        """Fans who followed `user_id` after their last mark_fans_seen (all fans without one)."""
        validate_user_id(user_id)
        keys = [self.keys.fans(user_id), self.keys.fans_seen(user_id)]
        return int(await scripts.NEW_FANS_COUNT_SCRIPT.run(self.redis, keys))


def _profiles(ids: list[str], flat: list[Any]) -> list[Profile | None]:
    return [
        None if flat[i + 2] is None else Profile(user_id, flat[i], flat[i + 1], int(flat[i + 2]))
        for user_id, i in zip(ids, range(0, len(flat), 3), strict=True)
    ]


def _relations(viewer: str | None, ids: list[str], reply: list[Any]) -> list[Relation]:
    followed_at, fan_at = reply
    relations = []
    for user_id, out, back in zip(ids, followed_at, fan_at, strict=True):
        if user_id == viewer:
            relations.append(Relation(Relationship.SELF))
            continue
        relationship = Relationship.of(viewer_follows=out is not None, follows_viewer=back is not None)
        relations.append(Relation(relationship, _time(out), _time(back)))
    return relations


def _counts(n: list[int]) -> list[Counts]:
    return [Counts(n[i], n[i + 1], n[i + 2]) for i in range(0, len(n), 3)]


def _page_args(request: PageRequest) -> list[str | int]:
    cursor = request.cursor
    if cursor is None:
        return [request.direction.value, "0", "", "", request.limit]
    return [request.direction.value, "1", str(cursor.at), cursor.member, request.limit]


def _slice(list_id: str, entries: list[tuple[int, str]], request: PageRequest) -> Page:
    start, stop = window(entries, request)
    return build_page(list_id, entries[start:stop], total=len(entries), start=start, stop=stop)
