"""The follow graph on Redis: users, follows and every read the API needs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, NamedTuple, cast

from redis.asyncio import RedisCluster

from followgraph.store.graph import control_scripts as cs
from followgraph.store.graph import scripts
from followgraph.store.graph.columns import UserColumns, times_of
from followgraph.store.graph.errors import (
    BlockedError,
    CannotFollowSelfError,
    InvalidInputError,
    RateLimitedError,
    StoreError,
    UserNotFoundError,
)
from followgraph.store.graph.events import logged
from followgraph.store.graph.ids import validate_user_id, validate_user_ids
from followgraph.store.graph.keys import Keys
from followgraph.store.graph.model import (
    MAX_TIME,
    Counts,
    FollowResult,
    ListKind,
    Page,
    Parts,
    Profile,
    Relation,
    Relationship,
    UserFacts,
)
from followgraph.store.graph.paging import PageRequest, build_page, window
from followgraph.store.graph.profiles import validate_avatar_url, validate_name
from followgraph.store.graph.ratelimit import FollowLimit, limit_args
from followgraph.store.redis.channel import Reads
from followgraph.store.redis.lua import (
    AnyPipeline,
    Client,
    ScriptCall,
    run_pipeline,
    run_scripts,
)

DEFAULT_PAGE_SIZE = 20
# Members fetched per round trip when a list is intersected with another.
INTERSECTION_CHUNK = 5000


@dataclass(frozen=True, slots=True)
class Edge:
    """A follow to apply: `at` (epoch ms) keeps an imported follow's time, None means now."""

    follower: str
    followee: str
    at: int | None = None


def _follow_call(k: Keys, edge: Edge, limit: list[str]) -> ScriptCall:
    a, b = edge.follower, edge.followee
    keys = [
        k.profile(a), k.profile(b),
        k.following(a), k.fans(a), k.mutual(a),
        k.fans(b), k.following(b), k.mutual(b),
        k.blocking(a), k.blocked_by(a), k.requests_out(a), k.requests_in(b),
        k.follow_limit(a),
    ]  # fmt: skip
    return logged(k, a, (scripts.FOLLOW_SCRIPT, keys, [a, b, _at(edge), *limit]))


def _follow_out_call(k: Keys, edge: Edge, locked: bool, limit: list[str]) -> ScriptCall:
    a, b = edge.follower, edge.followee
    keys = [k.profile(a), k.following(a), k.fans(a), k.mutual(a), k.blocking(a), k.blocked_by(a)]
    keys += [k.requests_out(a), k.follow_limit(a)]
    args = [b, _at(edge), "1" if locked else "0", *limit]
    return logged(k, a, (scripts.FOLLOW_OUT_SCRIPT, keys, args))


def _follow_in_call(k: Keys, edge: Edge, at: str, pending: bool) -> ScriptCall:
    a, b = edge.follower, edge.followee
    keys = [k.fans(b), k.following(b), k.mutual(b), k.requests_in(b), k.blocking(b), k.blocked_by(b)]
    keys.append(k.profile(b))
    return scripts.FOLLOW_IN_SCRIPT, keys, [a, at, "1" if pending else "0"]


def _request_granted_call(k: Keys, edge: Edge, at: str) -> ScriptCall:
    """A's request to B becomes the follow B's step wrote (B unlocked between the steps), logged as
    an acceptance, as the acceptance of B's other pending requests is."""
    a, b = edge.follower, edge.followee
    keys = [k.requests_out(a), k.following(a), k.fans(a), k.mutual(a)]
    return logged(k, a, (cs.ACCEPT_IN_SCRIPT, keys, [b, at]))


def unfollow_out_call(k: Keys, a: str, b: str, removed_by_b: bool = False) -> ScriptCall:
    """A's step of an unfollow of B (or of a withdrawal of A's request), logged."""
    keys = [k.profile(a), k.following(a), k.mutual(a), k.fans(a), k.requests_out(a)]
    return logged(k, a, (scripts.UNFOLLOW_OUT_SCRIPT, keys, [b, "1" if removed_by_b else "0"]))


def _unfollow_call(k: Keys, a: str, b: str, removed_by_b: bool) -> ScriptCall:
    """Both steps of an unfollow in one script, on a single Redis."""
    keys = [k.profile(a), k.profile(b), k.following(a), k.mutual(a), k.fans(a)]
    keys += [k.fans(b), k.mutual(b), k.requests_out(a), k.requests_in(b)]
    return logged(k, a, (scripts.UNFOLLOW_SCRIPT, keys, [a, b, "1" if removed_by_b else "0"]))


def _at(edge: Edge) -> str:
    return "" if edge.at is None else str(edge.at)


def upsert_args(name: str | None, avatar_url: str | None, created_at: int | None) -> list[str]:
    """The UPSERT_USER script's arguments for fields that are already valid."""
    args = ["" if created_at is None else str(created_at)]
    if name is not None:
        args += ["name", name]
    if avatar_url is not None:
        args += ["avatarUrl", avatar_url]
    return args


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


class FollowStore:
    """Async access to the follow graph. The client must be created with decode_responses=True."""

    def __init__(self, redis: Client, *, keys: Keys | None = None, reads: Reads | None = None) -> None:
        self.redis = redis
        # Pages and users' facts go through the read channel when there is one (store/redis/channel.py,
        # store/redis/cluster_channel.py).
        self.reads = reads
        # On a cluster every script touches one user's slot: a follow is two steps, reads of many
        # users go out as one command per user (profiles) or per slot (counts), and the change log has
        # a stream per slot.
        self.cluster = isinstance(redis, RedisCluster)
        self.keys = replace(keys or Keys(), sharded=self.cluster)

    def _read(self, calls: Sequence[ScriptCall]) -> Awaitable[list[Any]]:
        """Replies of read-only script calls, in one round trip. (The awaitable of the channel's
        or the client's call itself: a coroutine of its own here would cost every read a frame.)"""
        if self.reads is None:
            return run_scripts(self.redis, calls)
        return self.reads.run_scripts(calls)

    async def run_repeatable(self, calls: Sequence[ScriptCall]) -> list[Any]:
        """Replies of script calls that change nothing when run a second time (a write step that
        finds its work done does nothing), in one round trip: through the read channel, which may
        send them again (over a new connection when one was lost; on a cluster, through redis-py
        when a slot moved or a node did not answer)."""
        return await self._read(calls)

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
        call = logged(self.keys, user_id, (scripts.UPSERT_USER_SCRIPT, [self.keys.profile(user_id)], args))
        [(created, stored_name, stored_avatar, stored_created)] = await run_scripts(self.redis, [call])
        profile = Profile(user_id, stored_name or None, stored_avatar or None, int(stored_created))
        return profile, bool(created)

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

    # -- writes ---------------------------------------------------------------------------------

    async def follow(
        self, *, follower: str, followee: str, at: int | None = None, limit: FollowLimit | None = None
    ) -> FollowResult:
        """`follower` follows `followee`; idempotent. `at` (epoch ms) keeps an imported follow's time.
        A follow of a locked account becomes a request (`pending`) unless `at` is given (an
        import); BlockedError when either blocks the other; RateLimitedError when the follower is
        over `limit` (checked and counted in the follow's own script). One round trip on a single
        Redis."""
        self.check_pair(follower, followee)
        if at is not None and not 0 <= at <= MAX_TIME:
            raise InvalidInputError(
                "A follow time must be an epoch time in ms from 1970 to 9999.", field="at"
            )
        [reply] = await self.follow_edges([Edge(follower, followee, at)], limit=limit)
        return _follow_result(reply, follower, followee, limit)

    async def follow_reading(
        self, *, follower: str, followee: str, limit: FollowLimit | None, parts: Parts
    ) -> tuple[FollowResult | StoreError, list[UserFacts]]:
        """follow(), and then the `parts` of the followee and of the follower (as the follower
        sees them), read after the write whether or not it succeeded: one round trip on a single
        Redis (a pipeline runs in order). A StoreError before any I/O (a bad id) is raised."""
        self.check_pair(follower, followee)
        return await self._reading(
            lambda: self.follow(follower=follower, followee=followee, limit=limit),
            lambda: _follow_call(self.keys, Edge(follower, followee), limit_args(limit)),
            lambda reply: _follow_result(reply, follower, followee, limit),
            follower,
            followee,
            parts,
        )

    async def follow_edges(
        self, edges: Sequence[Edge], *, limit: FollowLimit | None = None
    ) -> list[list[Any]]:
        """Apply valid, non-self `edges`; each reply is [status, changed, follow (or request) time,
        time of the follow back or None, pending], status -1/-2 for an unknown follower/followee,
        -3 when one blocks the other, -4 when the follower is over `limit` (time: when to retry);
        pending 1 when the follow became a request.

        One round trip on a single Redis (one atomic script per edge). On a cluster three: whether
        the users exist (and whether the followees are locked), then the followers' steps, then the
        followees' steps (and a fourth when a block or an unlock came between the steps). A follow
        that failed between its steps is completed by its retry, since both steps always run.
        """
        k = self.keys
        limited = limit_args(limit)
        if not self.cluster:
            return await run_scripts(self.redis, [_follow_call(k, e, limited) for e in edges])
        found = await self._profiles_of([u for e in edges for u in (e.follower, e.followee)])
        statuses = [_pair_status(found[e.follower], found[e.followee]) for e in edges]
        known = [e for e, status in zip(edges, statuses, strict=True) if status == 0]
        calls = [_follow_out_call(k, e, e.at is None and _locked(found[e.followee]), limited) for e in known]
        out = iter(await run_scripts(self.redis, calls))
        unknown: list[Any] = [0, None, None, 0]
        replies: list[list[Any]] = [next(out) if status == 0 else [status, *unknown] for status in statuses]
        # FOLLOW_OUT's own checks fail only if the follower vanished or a block came in between.
        done = [(e, r) for e, r in zip(edges, replies, strict=True) if r[0] == 0]
        seconds = await run_scripts(self.redis, [_follow_in_call(k, e, r[2], bool(r[4])) for e, r in done])
        # A block either way that ran between the steps: undo the first. A request to a followee
        # unlocked between the steps: the followee's step wrote the follow; the follower's makes it.
        refused = [(e, r) for (e, r), second in zip(done, seconds, strict=True) if second == 0]
        granted = [(e, r) for (e, r), second in zip(done, seconds, strict=True) if second == 2]
        undo = [unfollow_out_call(k, e.follower, e.followee) for e, _ in refused]
        await run_scripts(self.redis, undo + [_request_granted_call(k, e, r[2]) for e, r in granted])
        for _, reply in refused:
            reply[:] = [-3, 0, None, None, 0]
        for _, reply in granted:
            reply[4] = 0
        return replies

    async def _profiles_of(self, user_ids: Sequence[str]) -> dict[str, Profile | None]:
        ids = list(dict.fromkeys(user_ids))
        return dict(zip(ids, await self.profiles(ids), strict=True))

    async def pair_statuses(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """0 for each pair of registered users, -1/-2 when the first/second is unknown."""
        ids = list(dict.fromkeys(u for pair in pairs for u in pair))
        known = dict(zip(ids, await self.registered(ids), strict=True))
        return [0 if known[a] and known[b] else -1 if not known[a] else -2 for a, b in pairs]

    async def unfollow(
        self, *, follower: str, followee: str, removed_by_followee: bool = False
    ) -> FollowResult:
        """`follower` stops following `followee`, or withdraws a pending request; idempotent. The
        relationship is follower's view. `removed_by_followee`: the followee removed a fan (the
        event says REMOVE_FAN)."""
        self.check_pair(follower, followee, self_message="A user cannot unfollow themselves.")
        k, a, b = self.keys, follower, followee
        if self.cluster:
            [status] = await self.pair_statuses([(a, b)])
            changed, back = 0, None
            if status == 0:
                call = unfollow_out_call(k, a, b, removed_by_followee)
                [(status, changed, back)] = await run_scripts(self.redis, [call])
            if status == 0:
                keys = [k.fans(b), k.mutual(b), k.requests_in(b)]
                await scripts.UNFOLLOW_IN_SCRIPT.run(self.redis, keys, [a])
        else:
            call = _unfollow_call(k, a, b, removed_by_followee)
            [(status, changed, back)] = await run_scripts(self.redis, [call])
        return _unfollow_result([status, changed, back], follower, followee)

    async def unfollow_reading(
        self, *, follower: str, followee: str, parts: Parts
    ) -> tuple[FollowResult | StoreError, list[UserFacts]]:
        """unfollow(), then the `parts` of both users as follow_reading reads them: one round trip
        on a single Redis."""
        self.check_pair(follower, followee, self_message="A user cannot unfollow themselves.")
        return await self._reading(
            lambda: self.unfollow(follower=follower, followee=followee),
            lambda: _unfollow_call(self.keys, follower, followee, False),
            lambda reply: _unfollow_result(reply, follower, followee),
            follower,
            followee,
            parts,
        )

    async def _reading(
        self,
        write: Callable[[], Awaitable[FollowResult]],
        call: Callable[[], ScriptCall],
        result_of: Callable[[list[Any]], FollowResult],
        follower: str,
        followee: str,
        parts: Parts,
    ) -> tuple[FollowResult | StoreError, list[UserFacts]]:
        """A write's result (or the StoreError it ended in) and then the two users' facts: on a
        single Redis the write's script `call` and the reads in one pipeline (`result_of` reads
        its reply); on a cluster, or with nothing to read, `write` and then a read of its own."""
        result: FollowResult | StoreError
        if self.cluster or not parts.any:
            try:
                result = await write()
            except StoreError as exc:
                result = exc
            if not parts.any:
                return result, [UserFacts(followee), UserFacts(follower)]
            return result, await self.facts(follower, [followee, follower], parts)
        calls, parse = self._facts_calls(follower, [followee, follower], parts)
        replies = await run_scripts(self.redis, [call(), *calls])
        try:
            result = result_of(replies[0])
        except StoreError as exc:
            result = exc
        return result, parse(replies[1:]).facts()

    async def remove_fan(self, *, user: str, fan: str) -> FollowResult:
        """Make `fan` stop following `user`. The relationship is `user`'s view of `fan` afterwards."""
        self.check_pair(user, fan, self_message="A user cannot be their own fan.")
        result = await self.unfollow(follower=fan, followee=user, removed_by_followee=True)
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
    def check_pair(a: str, b: str, *, self_message: str = "A user cannot follow themselves.") -> None:
        validate_user_id(a)
        validate_user_id(b)
        if a == b:
            raise CannotFollowSelfError(self_message)

    @staticmethod
    def check_status(status: int, a: str, b: str) -> None:
        if status == -1:
            raise UserNotFoundError(a)
        if status == -2:
            raise UserNotFoundError(b)
        if status == -3:
            raise BlockedError(f"{a!r} and {b!r}: one of them blocks the other.")

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

    def _owner_keys(self, owner: str) -> list[str]:
        """What decides whether others see the owner's lists: all on the owner's slot."""
        return [self.keys.profile(owner), self.keys.fans(owner), self.keys.blocking(owner)]

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

    # -- reads: per-user facts, batched ---------------------------------------------------------

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
        keyed = profile and self.cluster
        if profile:
            keys = k.profiles(ids)
            if keyed:
                calls.append((scripts.PROFILE_READS, keys, []))
            elif len(ids) == 1:
                calls.append((scripts.PROFILE_READ, keys, []))
            else:
                calls.append((scripts.PROFILES_SCRIPT, keys, []))
        if relation and viewer is not None:
            calls.append((scripts.RELATIONS_SCRIPT, [k.following(viewer), k.fans(viewer)], ids))
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


def _follow_result(reply: list[Any], follower: str, followee: str, limit: FollowLimit | None) -> FollowResult:
    status, changed, when, back, pending = reply
    if status == -4 and limit is not None:
        raise RateLimitedError(limit.text, int(when))
    FollowStore.check_status(status, follower, followee)
    return FollowResult(
        bool(changed),
        Relationship.of(viewer_follows=not pending, follows_viewer=back is not None),
        pending=bool(pending),
    )


def _unfollow_result(reply: list[Any], follower: str, followee: str) -> FollowResult:
    status, changed, back = reply
    FollowStore.check_status(status, follower, followee)
    return FollowResult(bool(changed), Relationship.of(viewer_follows=False, follows_viewer=back is not None))


def _pair_status(a: Profile | None, b: Profile | None) -> int:
    return -1 if a is None else -2 if b is None else 0


def _locked(profile: Profile | None) -> bool:
    return profile is not None and profile.settings.locked
