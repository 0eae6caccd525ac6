"""The User type and its follow-list connections.

Plain fields are declared with `value(...)` (schema/declared.py): their value from what was
loaded, and what they need loaded. Both the general executor and compiled plans read those
declarations; docs/architecture.md shows how to add a field.
"""

from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeAlias

import strawberry

from followgraph.resolvers import lists, social, users
from followgraph.resolvers.context import Context
from followgraph.resolvers.node import USER_TYPE, to_global_id
from followgraph.resolvers.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from followgraph.schema.declared import (
    CONTROLS,
    COUNTS,
    PROFILE,
    RELATION,
    Values,
    Wants,
    list_metadata,
    value,
)
from followgraph.schema.enums import RELATIONSHIPS, AccountState, Relationship
from followgraph.schema.node import Node
from followgraph.schema.scalars import EpochMillis
from followgraph.schema.selection import selected
from followgraph.schema.settings import UserSettings
from followgraph.store import Controls, Entry, ListKind, Page, UserColumns, UserFacts
from followgraph.store import Relationship as StoreRelationship
from followgraph.store.graph.suggestions import MAX_SUGGESTIONS
from followgraph.store.graph.suggestions import Suggestion as StoreSuggestion

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
        column=lambda page, users: page.cursors,
        description="Opaque and stable: paging on with it neither repeats nor skips an entry that stayed "
        "in the list, whatever was added or removed meanwhile.",
    )
    node: "User"
    followed_at: EpochMillis = value(
        lambda edge: edge[0].at,
        column=lambda page, users: page.times,
        description="When the follow (or the mutual relation) began.",
    )
    relationship: Relationship = value(
        lambda edge: RELATIONSHIPS[edge[1].relation.relationship],
        column=lambda page, users: _relationships(users),
        needs=RELATION,
        description="node's relationship to the viewer (same value as node.relationship).",
    )


@strawberry.type(
    description=f"A page of users. first/last default to {DEFAULT_PAGE_SIZE} and may not exceed the "
    f"page-size limit ({MAX_PAGE_SIZE} unless configured otherwise)."
)
class FollowConnection:
    total_count: int = value(lambda page: page.total, description="Size of the whole list, not of this page.")
    hidden: bool = value(
        lambda page: page.hidden,
        description="True when the list's owner does not show it to the viewer (a hidden list, a locked "
        "account seen by a non-fan, a block): edges and nodes are then empty and there are no pages. "
        "totalCount still gives the size of the owner's own list (following, fans, mutuals); an overlap "
        "with a hidden list (commonFollowing, fansYouFollow) is hidden as a whole, with totalCount 0.",
    )
    edges: list[FollowEdge]
    nodes: list["User"] = strawberry.field(description="The users of `edges`, without the edge fields.")
    page_info: PageInfo

    @classmethod
    async def load(cls, info: Info, page: Page) -> "FollowConnection":
        """The connection of `page`, with what the selected user fields need loaded in one go."""
        needs = connection_needs(
            selected(info, "edges"), selected(info, "edges", "node"), selected(info, "nodes")
        )
        loaded = await load_facts(info, page.members, needs)
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
    return await users.facts(info.context, user_ids, needs)


async def users_at(info: Info, user_ids: Sequence[str], *path: str) -> list["User"]:
    """Users for the field at `path` below the current one (the current field itself when empty)."""
    loaded = await load_facts(info, user_ids, USER.needs(selected(info, *path)))
    return [User.of(facts) for facts in loaded]


def _list_field(kind: ListKind, description: str, *, owner_only: bool = False) -> Any:
    """A connection field over one of the user's sorted-set lists; `owner_only`: a list only its
    owner sees, null for anyone else (and not one the plans cover)."""

    async def resolve(
        self: "User",
        info: Info,
        first: First = None,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> FollowConnection | None:
        if owner_only and info.context.viewer_id != self.user_id:
            return None
        query = lists.list_query(
            info.context, kind, self.user_id, first=first, after=after, last=last, before=before
        )
        page = await lists.list_page(info.context, query)
        return await FollowConnection.load(info, page)

    if owner_only:
        return strawberry.field(resolver=resolve, description=description)
    return strawberry.field(
        resolver=resolve, description=description, metadata=list_metadata(kind), graphql_type=FollowConnection
    )


def _relation(get: Callable[[Any], Any], column: Callable[[UserColumns], list[Any]], description: str) -> Any:
    """A field of the user's relation to the viewer: `get` of the Relation, `column` of the users."""
    return value(lambda facts: get(facts.relation), column=column, needs=RELATION, description=description)


def _relationships(users: UserColumns) -> list[Relationship]:
    """The API's relationship of each user to the viewer."""
    return list(map(RELATIONSHIPS.__getitem__, users.relationships))


def _control(get: Callable[[Controls], bool], description: str) -> Any:
    """A block, mute or pending request between the user and the viewer."""
    return value(lambda facts: get(facts.controls), needs=CONTROLS, description=description)


def _own_settings(facts: UserFacts) -> UserSettings | None:
    if facts.profile is None or facts.relation.relationship is not StoreRelationship.SELF:
        return None
    return UserSettings.of(facts.profile.settings)


@strawberry.type(description="A registered user of the follow graph.")
class User(Node):
    id: strawberry.ID = value(
        lambda facts: to_global_id(USER_TYPE, facts.user_id),
        column=lambda users: [to_global_id(USER_TYPE, user_id) for user_id in users.user_ids],
        description="Relay global id (opaque).",
    )
    user_id: strawberry.ID = value(
        lambda facts: facts.user_id,
        column=lambda users: users.user_ids,
        description="The application's own user id, as given to upsertUser / import.",
    )

    name: str | None = value(
        lambda facts: facts.profile.name if facts.profile else None,
        column=lambda users: users.names,
        needs=PROFILE,
        description="Display name.",
    )
    avatar_url: str | None = value(
        lambda facts: facts.profile.avatar_url if facts.profile else None,
        column=lambda users: users.avatar_urls,
        needs=PROFILE,
        description="Absolute http(s) URL of the avatar image.",
    )
    account_state: AccountState = value(
        lambda facts: AccountState(facts.profile.account_state) if facts.profile else AccountState.ACTIVE,
        # The users of a page or list are all active: an account that is off is in no one's sets.
        column=lambda users: [AccountState.ACTIVE] * len(users.user_ids),
        needs=PROFILE,
        description="Where the account stands: other than ACTIVE only to the user and to admins, "
        "since to everyone else an account that is off does not exist.",
    )
    created_at: EpochMillis | None = value(
        lambda facts: facts.profile.created_at if facts.profile else None,
        column=lambda users: users.created_ats,
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
        lambda relation: RELATIONSHIPS[relation.relationship],
        _relationships,
        "This user's relationship to the viewer.",
    )
    viewer_is_following: bool = _relation(
        lambda relation: relation.viewer_follows,
        lambda users: [at is not None for at in users.viewer_followed_ats],
        "Whether the viewer follows this user.",
    )
    is_following_viewer: bool = _relation(
        lambda relation: relation.follows_viewer,
        lambda users: [at is not None for at in users.followed_viewer_ats],
        "Whether this user follows the viewer.",
    )
    viewer_followed_at: EpochMillis | None = _relation(
        lambda relation: relation.viewer_followed_at,
        lambda users: users.viewer_followed_ats,
        "When the viewer followed this user; null if the viewer does not.",
    )
    followed_viewer_at: EpochMillis | None = _relation(
        lambda relation: relation.followed_viewer_at,
        lambda users: users.followed_viewer_ats,
        "When this user followed the viewer; null if they do not.",
    )

    viewer_blocks: bool = _control(lambda c: c.viewer_blocks, "The viewer blocks this user.")
    blocks_viewer: bool = _control(
        lambda c: c.blocks_viewer,
        "This user blocks the viewer: the viewer can neither follow them nor see their lists.",
    )
    viewer_mutes: bool = _control(
        lambda c: c.viewer_mutes,
        "The viewer mutes this user: the graph is unchanged, but their events are not pushed to the viewer.",
    )
    is_locked: bool = value(
        lambda facts: facts.profile is not None and facts.profile.settings.locked,
        column=lambda users: users.locked,
        needs=PROFILE,
        description="A locked account approves each new fan: a follow becomes a follow request.",
    )
    viewer_requested_follow: bool = _control(
        lambda c: c.viewer_requested, "The viewer asked to follow this (locked) user and has no answer yet."
    )
    requested_follow_viewer: bool = _control(
        lambda c: c.requested_viewer, "This user asked to follow the viewer, who has not answered yet."
    )
    settings: UserSettings | None = value(
        _own_settings,
        needs=PROFILE | RELATION,
        description="The user's own settings. Null unless the user is the viewer.",
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

    follow_requests = _list_field(
        ListKind.REQUESTS_IN,
        "Pending follow requests to this user, newest first; followedAt is when the request was made. "
        "Null unless the user is the viewer.",
        owner_only=True,
    )
    sent_follow_requests = _list_field(
        ListKind.REQUESTS_OUT,
        "Follow requests this user made that are still pending, newest first. "
        "Null unless the user is the viewer.",
        owner_only=True,
    )
    blocking = _list_field(
        ListKind.BLOCKING,
        "Users this user blocks, newest first; followedAt is when the block was made. "
        "Null unless the user is the viewer.",
        owner_only=True,
    )
    muting = _list_field(
        ListKind.MUTING,
        "Users this user mutes, newest first; followedAt is when the mute was made. "
        "Null unless the user is the viewer.",
        owner_only=True,
    )

    @strawberry.field(
        description="Exact number of pending follow requests to this user. "
        "Null unless the user is the viewer."
    )
    async def follow_request_count(self, info: Info) -> int | None:
        return await social.pending_count(info.context, self.user_id)

    @strawberry.field(
        description="People the viewer may know (可能认识的人): users followed by many of the users "
        "the viewer follows, best first. Never the viewer, nobody the viewer follows or has asked to "
        "follow, blocks or is blocked by. Null unless the user is the viewer."
    )
    async def suggestions(
        self,
        info: Info,
        first: Annotated[
            int | None,
            strawberry.argument(
                description=f"At most {MAX_SUGGESTIONS}; default {social.DEFAULT_SUGGESTIONS}."
            ),
        ] = None,
    ) -> list["Suggestion"] | None:
        found = await social.suggestions_for(info.context, self.user_id, first=first)
        return None if found is None else await Suggestion.load(info, found)

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


@strawberry.type(description="A suggested user, with the reason.")
class Suggestion:
    user: User
    followed_by_count: int = strawberry.field(
        description="How many of the users the viewer follows follow this user."
    )
    via: strawberry.Private[list[User]]

    @strawberry.field(description="A few of those users, most recently followed by the viewer first.")
    def followed_by(
        self,
        first: Annotated[
            int | None,
            strawberry.argument(
                description=f"At most {social.MAX_FOLLOWED_BY}; default {social.DEFAULT_FOLLOWED_BY}."
            ),
        ] = None,
    ) -> list[User]:
        return self.via[: social.followed_by_size(first)]

    @classmethod
    async def load(cls, info: Info, found: Sequence[StoreSuggestion]) -> list["Suggestion"]:
        """The suggestions with their users and the users they came by, loaded in one batch."""
        needs = USER.needs(selected(info, "user") | selected(info, "followedBy"))
        ids = list(dict.fromkeys([s.user_id for s in found] + [u for s in found for u in s.followed_by]))
        users = {facts.user_id: User.of(facts) for facts in await load_facts(info, ids, needs)}
        return [
            cls(
                user=users[s.user_id],
                followed_by_count=s.followed_by_count,
                via=[users[u] for u in s.followed_by],
            )
            for s in found
        ]
