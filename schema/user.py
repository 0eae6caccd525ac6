"""The User type and its follow-list connections."""

from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeAlias

import strawberry

from followgraph.resolvers import lists, users
from followgraph.resolvers.context import Context
from followgraph.resolvers.node import USER_TYPE, to_global_id
from followgraph.schema.enums import Relationship
from followgraph.schema.node import Node
from followgraph.schema.scalars import EpochMillis
from followgraph.schema.selection import Wants, selected_names, wants
from followgraph.store import ListKind, Page, UserFacts

Info: TypeAlias = strawberry.Info[Context, None]

FIRST = "Return at most this many entries from the start (after `after`); 0 to 100, default 20."
AFTER = "A cursor from this list: return entries after it."
LAST = "Return at most this many entries from the end (before `before`); 0 to 100."
BEFORE = "A cursor from this list: return entries before it."
First = Annotated[int | None, strawberry.argument(description=FIRST)]
After = Annotated[str | None, strawberry.argument(description=AFTER)]
Last = Annotated[int | None, strawberry.argument(description=LAST)]
Before = Annotated[str | None, strawberry.argument(description=BEFORE)]


@strawberry.type(description="Where a page sits in its list (Relay).")
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type(description="A user in a follow list, with when the follow happened.")
class FollowEdge:
    cursor: str = strawberry.field(
        description="Opaque and stable: paging on with it neither repeats nor skips an entry that stayed "
        "in the list, whatever was added or removed meanwhile."
    )
    node: "User"
    followed_at: EpochMillis = strawberry.field(description="When the follow (or the mutual relation) began.")
    relationship: Relationship = strawberry.field(
        description="node's relationship to the viewer (same value as node.relationship)."
    )


@strawberry.type(description="A page of users. first/last default to 20 and may not exceed 100.")
class FollowConnection:
    total_count: int = strawberry.field(description="Size of the whole list, not of this page.")
    edges: list[FollowEdge]
    nodes: list["User"] = strawberry.field(description="The users of `edges`, without the edge fields.")
    page_info: PageInfo

    @classmethod
    async def load(cls, info: Info, page: Page) -> "FollowConnection":
        """The connection of `page`, with what the selected user fields need loaded in one go."""
        needs = wants(info, ("edges", "node"), ("nodes",))
        if "relationship" in selected_names(info, "edges"):
            needs = Wants(needs.profile, True, needs.counts)
        users = await load_users(info, [e.user_id for e in page.entries], needs)
        edges = [
            FollowEdge(
                cursor=e.cursor, node=user, followed_at=EpochMillis(e.at), relationship=user.relationship
            )
            for e, user in zip(page.entries, users, strict=True)
        ]
        return cls(
            total_count=page.total,
            edges=edges,
            nodes=users,
            page_info=PageInfo(
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
                start_cursor=page.start_cursor,
                end_cursor=page.end_cursor,
            ),
        )


async def load_users(info: Info, user_ids: Sequence[str], needs: Wants) -> list["User"]:
    """Users with the fields `needs` says are selected filled in."""
    if not (needs.profile or needs.relation or needs.counts):
        return [User.of(UserFacts(user_id)) for user_id in user_ids]
    loaded = await users.facts(
        info.context, user_ids, profile=needs.profile, relation=needs.relation, counts=needs.counts
    )
    return [User.of(f) for f in loaded]


async def users_at(info: Info, user_ids: Sequence[str], *path: str) -> list["User"]:
    """Users for the field at `path` below the current one (the current field itself when empty)."""
    return await load_users(info, user_ids, wants(info, path))


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

    return strawberry.field(resolver=resolve, description=description)


@strawberry.type(description="A registered user of the follow graph.")
class User(Node):
    id: strawberry.ID = strawberry.field(description="Relay global id (opaque).")
    user_id: strawberry.ID = strawberry.field(
        description="The application's own user id, as given to upsertUser / import."
    )

    name: str | None = strawberry.field(description="Display name.")
    avatar_url: str | None = strawberry.field(description="Absolute http(s) URL of the avatar image.")
    created_at: EpochMillis | None = strawberry.field(description="When the user was registered.")
    following_count: int = strawberry.field(description="Exact: always equal to following.totalCount.")
    fans_count: int = strawberry.field(description="Exact: always equal to fans.totalCount.")
    mutual_count: int = strawberry.field(description="Exact: always equal to mutuals.totalCount.")
    relationship: Relationship = strawberry.field(description="This user's relationship to the viewer.")
    viewer_is_following: bool = strawberry.field(description="Whether the viewer follows this user.")
    is_following_viewer: bool = strawberry.field(description="Whether this user follows the viewer.")
    viewer_followed_at: EpochMillis | None = strawberry.field(
        description="When the viewer followed this user; null if the viewer does not."
    )
    followed_viewer_at: EpochMillis | None = strawberry.field(
        description="When this user followed the viewer; null if they do not."
    )

    @classmethod
    def of(cls, facts: UserFacts) -> "User":
        """A User from what was loaded; fields of parts not loaded were not selected."""
        return cls(**{attribute: value(facts) for attribute, value in USER_VALUES.values()})

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


def _at(at: int | None) -> EpochMillis | None:
    return None if at is None else EpochMillis(at)


# Every plain-value field of User, by GraphQL name: its attribute and its value from what was
# loaded. User.of builds users with it; compiled plans (schema/compiled.py) read it directly.
USER_VALUES: dict[str, tuple[str, Callable[[UserFacts], Any]]] = {
    "id": ("id", lambda f: strawberry.ID(to_global_id(USER_TYPE, f.user_id))),
    "userId": ("user_id", lambda f: strawberry.ID(f.user_id)),
    "name": ("name", lambda f: f.profile.name if f.profile else None),
    "avatarUrl": ("avatar_url", lambda f: f.profile.avatar_url if f.profile else None),
    "createdAt": ("created_at", lambda f: EpochMillis(f.profile.created_at) if f.profile else None),
    "followingCount": ("following_count", lambda f: f.counts.following if f.counts else 0),
    "fansCount": ("fans_count", lambda f: f.counts.fans if f.counts else 0),
    "mutualCount": ("mutual_count", lambda f: f.counts.mutual if f.counts else 0),
    "relationship": ("relationship", lambda f: Relationship.of(f.relation.relationship)),
    "viewerIsFollowing": ("viewer_is_following", lambda f: f.relation.viewer_follows),
    "isFollowingViewer": ("is_following_viewer", lambda f: f.relation.follows_viewer),
    "viewerFollowedAt": ("viewer_followed_at", lambda f: _at(f.relation.viewer_followed_at)),
    "followedViewerAt": ("followed_viewer_at", lambda f: _at(f.relation.followed_viewer_at)),
}
