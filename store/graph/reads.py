"""The store's reads: pages of the lists (keyset, newest first, hidden as the owner says),
intersections, and users' facts batched in one round trip."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, NamedTuple, cast

from followgraph.store.graph import scripts
from followgraph.store.graph.base import StoreBase
from followgraph.store.graph.columns import UserColumns, times_of
from followgraph.store.graph.ids import validate_user_id, validate_user_ids
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.model import (
    Counts,
    ListKind,
    Page,
    Parts,
    Profile,
    Relation,
    UserFacts,
)
from followgraph.store.graph.paging import PageRequest, build_page, window
from followgraph.store.redis.lua import (
    AnyPipeline,
    ScriptCall,
    run_pipeline,
)

DEFAULT_PAGE_SIZE = 20
# Members fetched per round trip when a list is intersected with another.
INTERSECTION_CHUNK = 5000


def list_id(kind: ListKind, user_id: str) -> str:
    """What a list's cursors are bound to."""
    # `_value_` rather than `value`: Enum's `value` is a property, a Python call each time (3.11).
    return f"{kind._value_}:{user_id}"


class ListQuery(NamedTuple):
    """A validated request for one page of one user's list. (A named tuple rather than a frozen
    dataclass: one is made every page, and a frozen dataclass sets each field through
    object.__setattr__, at over twice the cost; hashable all the same, as DataLoader keys must be.)"""

    kind: ListKind
    user_id: str
    request: PageRequest
    # Whose page it is: a viewer's (None: anonymous) is checked against the owner's settings and
    # blocks; the owner, or the store's own reads (viewer_checked False), see everything.
    viewer: str | None = None
    viewer_checked: bool = False

    @property
    def list_id(self) -> str:
        return list_id(self.kind, self.user_id)

    @property
    def guarded(self) -> bool:
        """Whether the owner's settings and blocks decide if the viewer sees this page."""
        return self.viewer_checked and self.kind.public and self.viewer != self.user_id


class ReadOps(StoreBase):
    """Pages, intersections and users' facts. Reads only: no read path writes."""

    async def profiles(self, user_ids: Sequence[str]) -> list[Profile | None]:
        """Each user's profile, None for an unregistered one; one round trip."""
        facts = await self.user_facts(None, user_ids, profile=True, relation=False, counts=False)
        return [f.profile for f in facts]

    async def registered(self, user_ids: Sequence[str]) -> list[bool]:
        ids = validate_user_ids(user_ids)

        def fill(pipe: AnyPipeline) -> None:
            for user_id in ids:
                pipe.exists(self.keys.profile(user_id))

        return [bool(n) for n in await run_pipeline(self.redis, fill)] if ids else []

    async def _profiles_of(self, user_ids: Sequence[str]) -> dict[str, Profile | None]:
        ids = list(dict.fromkeys(user_ids))
        return dict(zip(ids, await self.profiles(ids), strict=True))

    async def pair_statuses(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """0 for each pair of registered users, -1/-2 when the first/second is unknown."""
        ids = list(dict.fromkeys(u for pair in pairs for u in pair))
        known = dict(zip(ids, await self.registered(ids), strict=True))
        return [0 if known[a] and known[b] else -1 if not known[a] else -2 for a, b in pairs]

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
        viewer: str | None = None,
        viewer_checked: bool = False,
    ) -> ListQuery:
        """Validate the arguments of a page of `user_id`'s list (cursors included) without I/O.
        With `viewer_checked`, the page is `viewer`'s, and hidden when the owner hides it."""
        validate_user_id(user_id)
        if viewer is not None:
            validate_user_id(viewer, field="viewer")
        request = PageRequest.parse(
            list_id(kind, user_id), first=first, after=after, last=last, before=before, default=default
        )
        return ListQuery(kind, user_id, request, viewer, viewer_checked)

    def _list_key(self, query: ListQuery) -> str:
        return self.keys.of_list(query.kind._value_, query.user_id)

    async def pages(self, queries: Sequence[ListQuery]) -> list[Page]:
        """One page per query, all in one round trip."""
        if not queries:
            return []

        calls = [self._page_call(q) for q in queries]
        results = await self._read(calls)
        pages = []
        for q, (total, start, stop, flat, hidden) in zip(queries, results, strict=True):
            if hidden:
                pages.append(Page.hidden_list(int(total)))
                continue
            members = flat[0::2]
            times = times_of(flat[1::2])
            pages.append(
                build_page(q.list_id, members, times, total=int(total), start=int(start), stop=int(stop))
            )
        return pages

    def _page_call(self, query: ListQuery) -> ScriptCall:
        keys, args = [self._list_key(query)], _page_args(query.request)
        if query.guarded:
            keys += self._owner_keys(query.user_id)
            args += [query.viewer or "", query.kind.hidden_by]
        return scripts.PAGE_SCRIPT, keys, args

    async def page(self, kind: ListKind, user_id: str, **arguments: Any) -> Page:
        """One page of `user_id`'s list: first/after forward, last/before backward, newest first."""
        return (await self.pages([self.list_query(kind, user_id, **arguments)]))[0]

    async def common_following(
        self,
        user_id: str,
        other_id: str,
        *,
        first: int | None = None,
        after: str | None = None,
        viewer: str | None = None,
        viewer_checked: bool = False,
    ) -> Page:
        """Users both follow, ordered by when `user_id` followed them, newest first. With
        `viewer_checked`, hidden from `viewer` when either hides whom they follow from them."""
        validate_user_id(user_id)
        validate_user_id(other_id, field="otherUserId")
        list_id = f"common:{user_id}:{other_id}"
        request = PageRequest.parse(
            list_id, first=first, after=after, last=None, before=None, default=DEFAULT_PAGE_SIZE
        )
        guards = [(u, ListKind.FOLLOWING) for u in (user_id, other_id)] if viewer_checked else []
        entries, hidden = await self._intersection(
            self.keys.following(user_id), self.keys.following(other_id), viewer, guards
        )
        return _slice(list_id, entries, request, hidden)

    async def fans_you_follow(
        self, viewer: str | None, user_id: str, *, first: int | None = None, after: str | None = None
    ) -> Page:
        """Fans of `user_id` whom `viewer` follows, newest fan first; empty for an anonymous viewer,
        hidden when `user_id` hides their fans from `viewer`."""
        validate_user_id(user_id)
        list_id = f"fans-you-follow:{viewer or ''}:{user_id}"
        request = PageRequest.parse(
            list_id, first=first, after=after, last=None, before=None, default=DEFAULT_PAGE_SIZE
        )
        if viewer is None:
            owner, args = self._owner_keys(user_id), ["", ListKind.FANS.hidden_by]
            return _slice(
                list_id, [], request, bool(await scripts.HIDDEN_SCRIPT.run(self.redis, owner, args))
            )
        validate_user_id(viewer, field="viewer")
        entries, hidden = await self._intersection(
            self.keys.fans(user_id), self.keys.following(viewer), viewer, [(user_id, ListKind.FANS)]
        )
        return _slice(list_id, entries, request, hidden)

    async def _intersection(
        self, ordered: str, other: str, viewer: str | None, guards: Sequence[tuple[str, ListKind]]
    ) -> tuple[list[tuple[int, str]], bool]:
        """Members of both sorted sets, scored and sorted (newest first) as in `ordered`, and
        whether any of the `guards` (owner, list) is hidden from `viewer`: then no members at all.

        Walks the smaller set in chunks and tests membership in the larger with ZMSCORE: reads
        only, and the two sets may live in different cluster slots.
        """
        checks = [(owner, kind) for owner, kind in guards if owner != viewer]

        def fill(pipe: AnyPipeline) -> None:
            pipe.zcard(ordered)
            pipe.zcard(other)
            for owner, kind in checks:
                args = [viewer or "", kind.hidden_by]
                scripts.HIDDEN_SCRIPT.queue(pipe, self._owner_keys(owner), args)

        first = await run_pipeline(self.redis, fill, [scripts.HIDDEN_SCRIPT])
        sizes, hidden = first[:2], any(first[2:])
        if hidden:
            # Nothing derived from a list the viewer may not see, not even the overlap's size: a
            # puppet account following one user at a time would turn it into a membership test.
            return [], True
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
        return found, hidden

    async def relations(self, viewer: str | None, user_ids: Sequence[str]) -> list[Relation]:
        """How each user relates to `viewer`, with the follow times: one round trip for all of them."""
        facts = await self.user_facts(viewer, user_ids, profile=False, relation=True, counts=False)
        return [f.relation for f in facts]

    async def counts(self, user_ids: Sequence[str]) -> list[Counts]:
        """Following, fans and mutual counts of each user: one round trip for all of them."""
        facts = await self.user_facts(None, user_ids, profile=False, relation=False, counts=True)
        return [f.counts or Counts(0, 0, 0) for f in facts]

    async def facts(self, viewer: str | None, user_ids: Sequence[str], parts: Parts) -> list[UserFacts]:
        """The `parts` of each user (profile, relation to `viewer`, counts, blocks, mutes and
        requests between them and `viewer`): one round trip."""
        return (await self.columns(viewer, user_ids, parts)).facts()

    async def columns(self, viewer: str | None, user_ids: Sequence[str], parts: Parts) -> UserColumns:
        """What `facts` reads, in columns rather than an object per user (store/graph/columns.py)."""
        calls, parse = self._facts_calls(viewer, user_ids, parts)
        return parse(await self._read(calls)) if calls else parse([])

    async def user_facts(
        self,
        viewer: str | None,
        user_ids: Sequence[str],
        *,
        profile: bool,
        relation: bool,
        counts: bool,
        controls: bool = False,
    ) -> list[UserFacts]:
        """The parts asked for of each user: `facts` with the parts by name."""
        return await self.facts(viewer, user_ids, Parts(profile, relation, counts, controls))

    def _facts_calls(
        self, viewer: str | None, user_ids: Sequence[str], parts: Parts
    ) -> tuple[list[ScriptCall], Callable[[list[Any]], UserColumns]]:
        """The read calls of user_facts, and how to turn their replies into the users' facts."""
        ids = validate_user_ids(user_ids)
        if viewer is not None:
            validate_user_id(viewer, field="viewer")
        profile, counts = parts.profile, parts.counts
        relation = parts.relation and viewer is not None
        controls = parts.controls and viewer is not None
        if not ids:
            return [], lambda reply: UserColumns(viewer, [])
        k = self.keys
        groups = self._slot_groups(ids) if counts else []
        calls: list[ScriptCall] = []
        # A profile a key at a time where the channel keeps them (and on a cluster, where a page's
        # users sit in up to 20 slots); else one script call for all.
        keyed = profile and (self.cluster or (self.reads is not None and self.reads.keeps))
        if profile:
            keys = k.profiles(ids)
            if keyed:
                calls.append((scripts.PROFILE_READS, keys, []))
            elif len(ids) == 1:
                calls.append((scripts.PROFILE_READ, keys, []))
            else:
                calls.append((scripts.PROFILES_SCRIPT, keys, []))
        if relation and viewer is not None:
            calls += [
                (scripts.RELATION_READ, [k.following(viewer)], ids),
                (scripts.RELATION_READ, [k.fans(viewer)], ids),
            ]
        if counts:
            calls += [
                (scripts.COUNTS_SCRIPT, [key for u in g for key in _count_keys(k, u)], []) for g in groups
            ]
        if controls and viewer is not None:
            calls.append((scripts.CONTROLS_SCRIPT, _control_keys(k, viewer), ids))

        def parse(replies: list[Any]) -> UserColumns:
            if keyed:  # a list of values per user, made one list as PROFILES_SCRIPT replies
                replies[0] = list(chain.from_iterable(replies[0]))
            return UserColumns.of_replies(
                viewer,
                ids,
                groups,
                replies,
                profile=profile,
                relation=relation,
                counts=counts,
                controls=controls,
            )

        return calls, parse

    def _slot_groups(self, ids: list[str]) -> list[list[str]]:
        """`ids` split by cluster slot (in first-seen order); all of them at once on a single Redis."""
        if not self.cluster:
            return [ids]
        groups: dict[int, list[str]] = {}
        for user_id in ids:
            groups.setdefault(self.keys.slot(user_id), []).append(user_id)
        return list(groups.values())

    async def new_fans_count(self, user_id: str) -> int:
        """Fans who followed `user_id` after their last mark_fans_seen (all fans without one)."""
        validate_user_id(user_id)
        keys = [self.keys.fans(user_id), self.keys.fans_seen(user_id)]
        return int(await scripts.NEW_FANS_COUNT_SCRIPT.run(self.redis, keys))


def _count_keys(k: Keys, user_id: str) -> tuple[str, str, str]:
    return k.following(user_id), k.fans(user_id), k.mutual(user_id)


def _control_keys(k: Keys, viewer: str) -> list[str]:
    return [
        k.blocking(viewer),
        k.blocked_by(viewer),
        k.muting(viewer),
        k.requests_out(viewer),
        k.requests_in(viewer),
    ]


def _page_args(request: PageRequest) -> list[str | int]:
    cursor = request.cursor
    if cursor is None:
        return [request.direction._value_, "0", "", "", request.limit]
    return [request.direction._value_, "1", str(cursor.at), cursor.member, request.limit]


def _slice(list_id: str, entries: list[tuple[int, str]], request: PageRequest, hidden: bool = False) -> Page:
    if hidden:
        return Page.hidden_list(0)  # an overlap with a hidden list: its size would reveal members
    start, stop = window(entries, request)
    rows = entries[start:stop]
    members, times = [member for _, member in rows], [at for at, _ in rows]
    return build_page(list_id, members, times, total=len(entries), start=start, stop=stop)


def pair_status(a: Profile | None, b: Profile | None) -> int:
    return -1 if a is None else -2 if b is None else 0
