"""The root Query type."""

from typing import TypeAlias

import strawberry

from resolvers import users
from resolvers.context import Context
from schema.node import Node
from schema.user import User

Info: TypeAlias = strawberry.Info[Context, None]


def _user(user_id: str | None) -> User | None:
    return None if user_id is None else User.of(user_id)


@strawberry.type(
    description="Reads. Anyone may read; a bearer token makes relationships relative to its user."
)
class Query:
    @strawberry.field(description="The authenticated user; null when anonymous (or not registered).")
    async def viewer(self, info: Info) -> User | None:
        viewer_id = info.context.viewer_id
        if viewer_id is None:
            return None
        return _user(await users.registered_user(info.context, viewer_id))

    @strawberry.field(description="Null when no such user is registered.")
    async def user(self, info: Info, user_id: strawberry.ID) -> User | None:
        return _user(await users.registered_user(info.context, user_id))

    @strawberry.field(description="One entry per id, in order, null for unknown ids. At most 100 ids.")
    async def users(self, info: Info, user_ids: list[strawberry.ID]) -> list[User | None]:
        return [_user(user_id) for user_id in await users.registered_users(info.context, user_ids)]

    @strawberry.field(description="Fetches an object by its global id; null when it no longer exists.")
    async def node(self, info: Info, id: strawberry.ID) -> Node | None:
        (user_id,) = await users.nodes(info.context, [id])
        return _user(user_id)

    @strawberry.field(
        description="One entry per global id, in order, null where none exists. At most 100 ids."
    )
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[Node | None]:
        return [_user(user_id) for user_id in await users.nodes(info.context, ids)]
