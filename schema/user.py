"""The User type and its follow-list connections.

Plain fields are declared with `value(...)` (schema/declared.py): their value from what was
loaded, and what they need loaded. Both the general executor and compiled plans read those
declarations; see the README's architecture section for adding a field.
"""

from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeAlias

import strawberry

from followgraph.resolvers import lists, users
from followgraph.resolvers.context import Context
from followgraph.resolvers.node import USER_TYPE, to_global_id
from followgraph.resolvers.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from followgraph.schema.declared import COUNTS, PROFILE, RELATION, Values, Wants, list_metadata, value
from followgraph.schema.enums import Relationship
from followgraph.schema.node import Node
from followgraph.schema.scalars import EpochMillis
from followgraph.schema.selection import selected
from followgraph.store import Entry, ListKind, Page, UserFacts

Info: TypeAlias = strawberry.Info[Context, None]

_SIZE = f"0 to the server's page-size limit ({MAX_PAGE_SIZE} unless configured otherwise)"
FIRST = (
    f"Return at most this many entries from the start (after `after`); {_SIZE}, default {DEFAULT_PAGE_SIZE}."
)
AFTER = "A cursor from this list: return entries after it."
LAST = f"Return at most this many entries from the end (before `before`); {_SIZE}."
BEFORE = "A cursor from this list: return entries before it."
First = Annotated[int | None, strawberry.argument(description=FIRST)]
After = Annotated[str | None, strawberry.argument(description=AFTER)]
Last = Annotated[int | None, strawberry.argument(description=LAST)]
Before = Annotated[str | None, strawberry.argument(description=BEFORE)]


def _at(at: int | None) -> EpochMillis | None:
    return None if at is None else EpochMillis(at)


@strawberry.type(description="Where a page sits in its list (Relay).")
class PageInfo:
    has_next_page: bool = value(lambda page: page.has_next, description="Whether entries follow this page.")
    has_previous_page: bool = value(
        lambda page: page.has_previous, description="Whether entries precede this page."
    )
    start_cursor: str | None = value(
        lambda page: page.start_cursor, description="The first edge's cursor; null on an empty page."
    )
    end_cursor: str | None = value(
        lambda page: page.end_cursor, description="The last edge's cursor; null on an empty page."
    )


# An edge's values come from its list entry and the facts loaded of its user.
EdgeSource: TypeAlias = tuple[Entry, UserFacts]


@strawberry.type(description="A user in a follow list, with when the follow happened.")
class FollowEdge:
    cursor: str = value(
        lambda edge: edge[0].cursor,
        description="Opaque and stable: paging on with it neither repeats nor skips an entry that stayed "
        "in the list, whatever was added or removed meanwhile.",
    )
    node: "User"
    followed_at: EpochMillis = value(
        lambda edge: EpochMillis(edge[0].at), description="When the follow (or the mutual relation) began."
    )
    relationship: Relationship = value(
        lambda edge: Relationship.of(edge[1].relation.relationship),
        needs=RELATION,
        description="node's relationship to the viewer (same value as node.relationship).",
    )


@strawberry.type(
    description=f"A page of users. first/last default to {DEFAULT_PAGE_SIZE} and may not exceed the "
    f"page-size limit ({MAX_PAGE_SIZE} unless configured otherwise)."
)
class FollowConnection:
    total_count: int = value(lambda page: page.total, description="Size of the whole list, not of this page.")
    edges: list[FollowEdge]
    nodes: list["User"] = strawberry.field(description="The users of `edges`, without the edge fields.")
    page_info: PageInfo

    @classmethod
    async def load(cls, info: Info, page: Page) -> "FollowConnection":
        """The connection of `page`, with what the selected user fields need loaded in one go."""
        needs = connection_needs(
            selected(info, "edges"), selected(info, "edges", "node"), selected(info, "nodes")
        )
        loaded = await load_facts(info, [e.user_id for e in page.entries], needs)
        nodes = [User.of(facts) for facts in loaded]
        edges = [
            FollowEdge(node=user, **EDGE.build((entry, facts)))
            for entry, facts, user in zip(page.entries, loaded, nodes, strict=True)
        ]
        return cls(
            edges=edges, nodes=nodes, page_info=PageInfo(**PAGE_INFO.build(page)), **CONNECTION.build(page)
        )


def connection_needs(edge_names: set[str], edge_node_names: set[str], node_names: set[str]) -> Wants:
    """What a connection's users need loaded, from the fields selected on its edges, on their
    nodes and on its nodes."""
    return EDGE.needs(edge_names) | USER.needs(edge_node_names | node_names)


async def load_facts(info: Info, user_ids: Sequence[str], needs: Wants) -> list[UserFacts]:
    if not needs.any:
        return [UserFacts(user_id) for user_id in user_ids]
    return await users.facts(
        info.context, user_ids, profile=needs.profile, relation=needs.relation, counts=needs.counts
    )


async def users_at(info: Info, user_ids: Sequence[str], *path: str) -> list["User"]:
    """Users for the field at `path` below the current one (the current field itself when empty)."""
    loaded = await load_facts(info, user_ids, USER.needs(selected(info, *path)))
    return [User.of(facts) for facts in loaded]


def _list_field(kind: ListKind, description: str) -> Any:
    """A connection field over one of the user's sorted-set lists (the three differ only in kind)."""

    async def resolve(
        self: "User",
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> FollowConnection:
        page = await lists.list_page(
            info.context, kind, self.user_id, first=first, after=after, last=last, before=before
        )
        return await FollowConnection.load(info, page)

    return strawberry.field(resolver=resolve, description=description, metadata=list_metadata(kind))


def _relation(get: Callable[[Any], Any], description: str) -> Any:
    """A field of the user's relation to the viewer."""
    return value(lambda facts: get(facts.relation), needs=RELATION, description=description)


@strawberry.type(description="A registered user of the follow graph.")
class User(Node):
    id: strawberry.ID = value(
        lambda facts: strawberry.ID(to_global_id(USER_TYPE, facts.user_id)),
        description="Relay global id (opaque).",
    )
    user_id: strawberry.ID = value(
        lambda facts: strawberry.ID(facts.user_id),
        description="The application's own user id, as given to upsertUser / import.",
    )

    name: str | None = value(
        lambda facts: facts.profile.name if facts.profile else None,
        needs=PROFILE,
        description="Display name.",
    )
    avatar_url: str | None = value(
        lambda facts: facts.profile.avatar_url if facts.profile else None,
        needs=PROFILE,
        description="Absolute http(s) URL of the avatar image.",
    )
    created_at: EpochMillis | None = value(
        lambda facts: EpochMillis(facts.profile.created_at) if facts.profile else None,
        needs=PROFILE,
        description="When the user was registered.",
    )
    following_count: int = value(
        lambda facts: facts.counts.following if facts.counts else 0,
        needs=COUNTS,
        description="Exact: always equal to following.totalCount.",
    )
    fans_count: int = value(
        lambda facts: facts.counts.fans if facts.counts else 0,
        needs=COUNTS,
        description="Exact: always equal to fans.totalCount.",
    )
    mutual_count: int = value(
        lambda facts: facts.counts.mutual if facts.counts else 0,
        needs=COUNTS,
        description="Exact: always equal to mutuals.totalCount.",
    )
    relationship: Relationship = _relation(
        lambda relation: Relationship.of(relation.relationship), "This user's relationship to the viewer."
    )
    viewer_is_following: bool = _relation(
        lambda relation: relation.viewer_follows, "Whether the viewer follows this user."
    )
    is_following_viewer: bool = _relation(
        lambda relation: relation.follows_viewer, "Whether this user follows the viewer."
    )
    viewer_followed_at: EpochMillis | None = _relation(
        lambda relation: _at(relation.viewer_followed_at),
        "When the viewer followed this user; null if the viewer does not.",
    )
    followed_viewer_at: EpochMillis | None = _relation(
        lambda relation: _at(relation.followed_viewer_at),
        "When this user followed the viewer; null if they do not.",
    )

    @classmethod
    def of(cls, facts: UserFacts) -> "User":
        """A User from what was loaded; fields of parts not loaded were not selected."""
        return cls(**USER.build(facts))

    @strawberry.field(
        description="Fans gained since the user last called markFansSeen. Null unless the user is the viewer."
    )
    async def new_fans_count(self, info: Info) -> int | None:
        if info.context.viewer_id != self.user_id:
            return None
        return await info.context.store.new_fans_count(self.user_id)

    # -- lists ----------------------------------------------------------------------------------

    following = _list_field(
        ListKind.FOLLOWING,
        "Users this user follows, newest follow first. "
        "Each edge's followedAt is when this user followed them.",
    )
    fans = _list_field(
        ListKind.FANS,
        "Users who follow this user, newest first. Each edge's followedAt is when they followed this user.",
    )
    mutuals = _list_field(
        ListKind.MUTUAL,
        "Users this user follows who follow back (互粉), newest mutual first; "
        "followedAt is when the relation became mutual.",
    )

    @strawberry.field(
        description="Users followed by both this user and `userId` (共同关注), "
        "ordered by when this user followed them."
    )
    async def common_following(
        self,
        info: Info,
        user_id: Annotated[strawberry.ID, strawberry.argument(description="The other user.")],
        first: First = None,
        after: After = None,
    ) -> FollowConnection:
        page = await lists.common_following(info.context, self.user_id, user_id, first=first, after=after)
        return await FollowConnection.load(info, page)

    @strawberry.field(
        description='Fans of this user whom the viewer follows ("followed by people you know"), newest first.'
    )
    async def fans_you_follow(
        self,
        info: Info,
        first: First = None,
        after: After = None,
    ) -> FollowConnection:
        page = await lists.fans_you_follow(info.context, self.user_id, first=first, after=after)
        return await FollowConnection.load(info, page)


USER: Values[UserFacts] = Values(User)
EDGE: Values[EdgeSource] = Values(FollowEdge)
CONNECTION: Values[Page] = Values(FollowConnection)
PAGE_INFO: Values[Page] = Values(PageInfo)
