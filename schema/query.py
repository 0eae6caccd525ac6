"""The root Query type."""

from typing import TypeAlias

import strawberry

from resolvers import users
from resolvers.context import Context
from schema.node import Node
from schema.user import User, users_at

Info: TypeAlias = strawberry.Info[Context, None]


async def _users(info: Info, user_ids: list[str | None]) -> list[User | None]:
    """Users for the current field (None stays None), with what its selection needs loaded."""
    found = iter(await users_at(info, [user_id for user_id in user_ids if user_id is not None]))
    return [None if user_id is None else next(found) for user_id in user_ids]


@strawberry.type(
    description="Reads. Anyone may read; a bearer token makes relationships relative to its user."
)
class Query:
    @strawberry.field(description="The authenticated user; null when anonymous (or not registered).")
    async def viewer(self, info: Info) -> User | None:
        viewer_id = info.context.viewer_id
        if viewer_id is None:
            return None
        return (await _users(info, [await users.registered_user(info.context, viewer_id)]))[0]

    @strawberry.field(description="Null when no such user is registered.")
    async def user(self, info: Info, user_id: strawberry.ID) -> User | None:
        return (await _users(info, [await users.registered_user(info.context, user_id)]))[0]

    @strawberry.field(description="One entry per id, in order, null for unknown ids. At most 100 ids.")
    async def users(self, info: Info, user_ids: list[strawberry.ID]) -> list[User | None]:
        return await _users(info, await users.registered_users(info.context, user_ids))

    @strawberry.field(description="Fetches an object by its global id; null when it no longer exists.")
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        return (await _users(info, await users.nodes(info.context, [id])))[0]

    @strawberry.field(
        description="One entry per global id, in order, null where none exists. At most 100 ids."
    )
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        return list(await _users(info, await users.nodes(info.context, ids)))
