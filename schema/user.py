"""The User type and its follow-list connections."""

from typing import Annotated, Any, TypeAlias

import strawberry

from resolvers import lists
from resolvers.context import Context
from resolvers.node import USER_TYPE, to_global_id
from schema.enums import Relationship
from schema.node import Node
from schema.scalars import EpochMillis
from store import ListKind, Page

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

    @strawberry.field(description="node's relationship to the viewer (same value as node.relationship).")
    async def relationship(self, info: Info) -> Relationship:
        return Relationship.of((await info.context.loaders.relation.load(self.node.user_id)).relationship)


@strawberry.type(description="A page of users. first/last default to 20 and may not exceed 100.")
class FollowConnection:
    total_count: int = strawberry.field(description="Size of the whole list, not of this page.")
    edges: list[FollowEdge]
    page_info: PageInfo

    @strawberry.field(description="The users of `edges`, without the edge fields.")
    def nodes(self) -> list["User"]:
        return [edge.node for edge in self.edges]

    @classmethod
    def of(cls, page: Page) -> "FollowConnection":
        return cls(
            total_count=page.total,
            edges=[
                FollowEdge(cursor=e.cursor, node=User.of(e.user_id), followed_at=EpochMillis(e.at))
                for e in page.entries
            ],
            page_info=PageInfo(
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
                start_cursor=page.start_cursor,
                end_cursor=page.end_cursor,
            ),
        )


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
        return FollowConnection.of(page)

    return strawberry.field(resolver=resolve, description=description)


@strawberry.type(description="A registered user of the follow graph.")
class User(Node):
    id: strawberry.ID = strawberry.field(description="Relay global id (opaque).")
    user_id: strawberry.ID = strawberry.field(
        description="The application's own user id, as given to upsertUser / import."
    )

    @classmethod
    def of(cls, user_id: str) -> "User":
        return cls(id=strawberry.ID(to_global_id(USER_TYPE, user_id)), user_id=strawberry.ID(user_id))

    # -- profile --------------------------------------------------------------------------------

    @strawberry.field(description="Display name.")
    async def name(self, info: Info) -> str | None:
        profile = await info.context.loaders.profile.load(self.user_id)
        return profile.name if profile else None

    @strawberry.field(description="Absolute http(s) URL of the avatar image.")
    async def avatar_url(self, info: Info) -> str | None:
        profile = await info.context.loaders.profile.load(self.user_id)
        return profile.avatar_url if profile else None

    @strawberry.field(description="When the user was registered.")
    async def created_at(self, info: Info) -> EpochMillis | None:
        profile = await info.context.loaders.profile.load(self.user_id)
        return EpochMillis(profile.created_at) if profile else None

    # -- counts ---------------------------------------------------------------------------------

    @strawberry.field(description="Exact: always equal to following.totalCount.")
    async def following_count(self, info: Info) -> int:
        return (await info.context.loaders.counts.load(self.user_id)).following

    @strawberry.field(description="Exact: always equal to fans.totalCount.")
    async def fans_count(self, info: Info) -> int:
        return (await info.context.loaders.counts.load(self.user_id)).fans

    @strawberry.field(description="Exact: always equal to mutuals.totalCount.")
    async def mutual_count(self, info: Info) -> int:
        return (await info.context.loaders.counts.load(self.user_id)).mutual

    @strawberry.field(
        description="Fans gained since the user last called markFansSeen. Null unless the user is the viewer."
    )
    async def new_fans_count(self, info: Info) -> int | None:
        if info.context.viewer_id != self.user_id:
            return None
        return await info.context.store.new_fans_count(self.user_id)

    # -- relation to the viewer -----------------------------------------------------------------

    @strawberry.field(description="This user's relationship to the viewer.")
    async def relationship(self, info: Info) -> Relationship:
        return Relationship.of((await info.context.loaders.relation.load(self.user_id)).relationship)

    @strawberry.field(description="Whether the viewer follows this user.")
    async def viewer_is_following(self, info: Info) -> bool:
        return (await info.context.loaders.relation.load(self.user_id)).viewer_follows

    @strawberry.field(description="Whether this user follows the viewer.")
    async def is_following_viewer(self, info: Info) -> bool:
        return (await info.context.loaders.relation.load(self.user_id)).follows_viewer

    @strawberry.field(description="When the viewer followed this user; null if the viewer does not.")
    async def viewer_followed_at(self, info: Info) -> EpochMillis | None:
        at = (await info.context.loaders.relation.load(self.user_id)).viewer_followed_at
        return None if at is None else EpochMillis(at)

    @strawberry.field(description="When this user followed the viewer; null if they do not.")
    async def followed_viewer_at(self, info: Info) -> EpochMillis | None:
        at = (await info.context.loaders.relation.load(self.user_id)).followed_viewer_at
        return None if at is None else EpochMillis(at)

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
        return FollowConnection.of(page)

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
        return FollowConnection.of(page)
