"""The schema as an Apollo Federation 2 subgraph (FOLLOWGRAPH_FEDERATION=1).

User is an entity keyed by userId. `_entities` resolves its representations as `users(userIds:)`
resolves its ids: in one load of the request's facts DataLoader, so a batch of any size costs that
query's Redis round trips. name and avatarUrl are @shareable: a users subgraph that owns the
profile resolves them too, FollowGraph from its own copy (docs/architecture.md, "Federation:
@shareable profile fields").

The directives live in this schema alone: User's definition carries them only while this schema
is built, so the public schema, built without this module, prints as it always has. How Strawberry
builds a schema from a class's definition, and makes `_entities` of `entities_resolver`, is checked
by tests/test_internals.py.
"""

import copy
import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, Final, TypeAlias

import strawberry
from graphql import GraphQLError
from strawberry.federation import Schema as StrawberryFederationSchema
from strawberry.federation.schema import FederationAny
from strawberry.federation.schema_directives import Key, Shareable
from strawberry.federation.types import FieldSet
from strawberry.types.field import StrawberryField

from followgraph.resolvers import users
from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import bad_user_input
from followgraph.schema import FollowGraphSchema, build_schema
from followgraph.schema.document import graphql_name
from followgraph.schema.selection import selected
from followgraph.schema.user import USER, User

Info: TypeAlias = strawberry.Info[Context, None]

ENTITY = "User"
KEY = "userId"
# Fields a users subgraph that owns the profile also resolves.
SHARED = frozenset({"name", "avatarUrl"})
# Representations in one `_entities` call: a gateway sends one per distinct entity of a response,
# and each costs the loaders a user; a selection with pages is also bounded by the query cost.
MAX_REPRESENTATIONS = 1000
ARGUMENT = "representations"
# The first Federation 2 version: it has all this schema uses (@link, @key, @shareable), and every
# Federation 2 gateway or router composes it.
VERSION: Final = "2.0"


class FederatedSchema(FollowGraphSchema, StrawberryFederationSchema):
    """FollowGraph's schema with `_service`, `_entities` and the federation directives."""

    def __init__(self, *args: Any, **options: Any) -> None:
        options["federation_version"] = VERSION
        with _as_entity(User):
            super().__init__(*args, **options)

    # Strawberry's resolves each representation on its own; this one loads the whole batch at once.
    async def entities_resolver(  # type: ignore[override]
        self, info: Info, representations: list[FederationAny]
    ) -> list[FederationAny]:
        return await entities(info, representations)  # type: ignore[return-value]


# build_schema's schema, with the same options, as a federation subgraph.
build_subgraph_schema = partial(build_schema, kind=FederatedSchema)


async def entities(info: Info, representations: Sequence[object]) -> list[User | GraphQLError | None]:
    """The User of each representation, null for an unknown user and an error for a malformed
    representation: the users loaded as `users(userIds:)` loads them, in one batch."""
    if len(representations) > MAX_REPRESENTATIONS:
        raise bad_user_input(
            f"At most {MAX_REPRESENTATIONS} representations per call, got {len(representations)}.",
            argument=ARGUMENT,
        )
    ids: list[str | None] = []
    errors: dict[int, GraphQLError] = {}
    for index, representation in enumerate(representations):
        try:
            ids.append(_user_id(representation))
        except GraphQLError as error:
            ids.append(None)
            errors[index] = error
    found = await users.registered(info.context, ids, USER.needs(selected(info)))
    return [
        errors.get(index) or (None if facts is None else User.of(facts)) for index, facts in enumerate(found)
    ]


def _user_id(representation: object) -> str:
    if not isinstance(representation, Mapping) or representation.get("__typename") != ENTITY:
        raise bad_user_input(
            f"A representation must be a {ENTITY} ({{__typename, {KEY}}}).", argument=ARGUMENT
        )
    user_id = representation.get(KEY)
    if not isinstance(user_id, str):
        raise bad_user_input(f"A {ENTITY} representation needs its {KEY} (a string).", argument=ARGUMENT)
    return users.checked_user_id(user_id, argument=ARGUMENT)


@contextmanager
def _as_entity(cls: type) -> Iterator[None]:
    """`cls` keyed by KEY, its SHARED fields @shareable, for the schema built meanwhile: that
    schema keeps the definition it was built from, the class gets its own back."""
    definition = cls.__strawberry_definition__  # type: ignore[attr-defined]
    fields = [_shareable(field) if graphql_name(field) in SHARED else field for field in definition.fields]
    directives = [*(definition.directives or ()), Key(fields=FieldSet(KEY))]
    cls.__strawberry_definition__ = dataclasses.replace(  # type: ignore[attr-defined]
        definition, directives=directives, fields=fields
    )
    try:
        yield
    finally:
        cls.__strawberry_definition__ = definition  # type: ignore[attr-defined]


def _shareable(field: StrawberryField) -> StrawberryField:
    shared = copy.copy(field)
    shared.directives = [*field.directives, Shareable()]
    return shared
