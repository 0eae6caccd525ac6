"""The root Query type."""

from collections.abc import Sequence
from typing import TypeAlias

import strawberry

from followgraph.resolvers import search, users
from followgraph.resolvers.context import Context
from followgraph.schema.node import Node
from followgraph.schema.search import UserSearchConnection
from followgraph.schema.selection import selected
from followgraph.schema.user import USER, User
from followgraph.store.graph.search import MAX_RESULTS

Info: TypeAlias = strawberry.Info[Context, None]


async def _users(info: Info, user_ids: Sequence[str | None]) -> list[User | None]:
    """The registered users among `user_ids` (None otherwise), with what the current field's
    selection needs loaded in the same round trip as the registration check."""
    needs = USER.needs(selected(info))
    found = await users.registered(info.context, user_ids, needs)
    return [None if facts is None else User.of(facts) for facts in found]


@strawberry.type(
    description="Reads. Anyone may read; a bearer token makes relationships relative to its user."
)
class Query:
    @strawberry.field(description="The authenticated user; null when anonymous (or not registered).")
    async def viewer(self, info: Info) -> User | None:
        viewer_id = info.context.viewer_id
        if viewer_id is None:
            return None
        return (await _users(info, [viewer_id]))[0]

    @strawberry.field(description="Null when no such user is registered.")
    async def user(self, info: Info, user_id: strawberry.ID) -> User | None:
        return (await _users(info, [users.checked_user_id(user_id)]))[0]

    @strawberry.field(description="One entry per id, in order, null for unknown ids. At most 100 ids.")
    async def users(self, info: Info, user_ids: list[strawberry.ID]) -> list[User | None]:
        return await _users(info, users.checked_user_ids(user_ids))

    @strawberry.field(description="Fetches an object by its global id; null when it no longer exists.")
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        return (await _users(info, users.node_user_ids([id])))[0]

    @strawberry.field(
        description="One entry per global id, in order, null where none exists. At most 100 ids."
    )
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        return list(await _users(info, users.node_user_ids(ids)))

    @strawberry.field(
        description="People whose name or userId matches query (case- and accent-insensitive; each "
        "word of the query matches the start of a word of the name, or the whole userId), best first: "
        "users the viewer follows, then by fans. Never a user who blocks the viewer or whom the viewer "
        f"blocks. first defaults to {search.DEFAULT_RESULTS}, at most {MAX_RESULTS}."
    )
    async def search_users(
        self, info: Info, query: str, first: int | None = None, after: str | None = None
    ) -> UserSearchConnection:
        return await UserSearchConnection.load(info, query, first, after)
