"""The GraphQL schema: Strawberry types, the root Query and Mutation, and schema extensions."""

from collections.abc import Sequence
from typing import Any

from graphql import GraphQLError
from strawberry import Schema
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from schema.errors import MaskUnexpectedErrors
from schema.mutations import Mutation
from schema.query import Query
from schema.scalars import SCALAR_MAP
from schema.user import User
from schema.validation import RecordOperationName, RequireOperationName


class FollowGraphSchema(Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # MaskUnexpectedErrors logs what deserves a log; expected errors are the client's business.
        return None


def build_schema(*, extensions: Sequence[Any] = ()) -> FollowGraphSchema:
    """The schema with the given extensions after the ones every deployment needs."""
    return FollowGraphSchema(
        query=Query,
        mutation=Mutation,
        types=[User],
        config=StrawberryConfig(scalar_map=SCALAR_MAP),
        extensions=[MaskUnexpectedErrors, RequireOperationName, RecordOperationName, *extensions],
    )


schema = build_schema()

__all__ = ["FollowGraphSchema", "build_schema", "schema"]
