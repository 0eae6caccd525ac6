"""searchUsers' types: a page of users found, each with the viewer's relationship to them."""

from typing import TypeAlias

import strawberry

from followgraph.resolvers import search
from followgraph.resolvers.context import Context
from followgraph.schema.declared import PROFILE, RELATION
from followgraph.schema.enums import RELATIONSHIPS, Relationship
from followgraph.schema.selection import selected
from followgraph.schema.user import USER, PageInfo, User

Info: TypeAlias = strawberry.Info[Context, None]


@strawberry.type(description="A user found by searchUsers.")
class UserSearchEdge:
    cursor: str = strawberry.field(description="Opaque: pass it as after for the results that follow.")
    node: User
    relationship: Relationship = strawberry.field(
        description="node's relationship to the viewer (same value as node.relationship)."
    )


@strawberry.type(description="Search results: a page of users with the viewer's relationship to each.")
class UserSearchConnection:
    edges: list[UserSearchEdge]
    page_info: PageInfo

    @classmethod
    async def load(
        cls, info: Info, query: str, first: int | None, after: str | None
    ) -> "UserSearchConnection":
        needs = USER.needs(selected(info, "edges", "node")) | PROFILE | RELATION
        found = await search.search_users(info.context, query, needs, first=first, after=after)
        edges = [
            UserSearchEdge(
                cursor=cursor,
                node=User.of(facts),
                relationship=RELATIONSHIPS[facts.relation.relationship],
            )
            for facts, cursor in zip(found.users, found.cursors, strict=True)
        ]
        page_info = PageInfo(
            has_next_page=found.has_next,
            has_previous_page=found.offset > 0,
            start_cursor=found.cursors[0] if found.cursors else None,
            end_cursor=found.cursors[-1] if found.cursors else None,
        )
        return cls(edges=edges, page_info=page_info)
