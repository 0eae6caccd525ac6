"""The GraphQL schema: Strawberry types, the root Query and Mutation, and schema extensions."""

from collections.abc import Sequence
from functools import partial
from typing import Any

from graphql import GraphQLError
from strawberry import Schema
from strawberry.extensions import DisableIntrospection, MaxTokensLimiter, ParserCache
from strawberry.schema.config import StrawberryConfig
from strawberry.types import ExecutionContext

from followgraph.schema.errors import MaskUnexpectedErrors
from followgraph.schema.events import Subscription
from followgraph.schema.execution import AcyclicExecutionContext
from followgraph.schema.limits import EnforceQueryLimits, QueryLimits
from followgraph.schema.mutations import Mutation
from followgraph.schema.query import Query
from followgraph.schema.scalars import SCALAR_MAP
from followgraph.schema.user import User
from followgraph.schema.validation import (
    CapErrors,
    CappedValidation,
    ErrorCodes,
    HideSuggestions,
    RecordOperationName,
    RequireOperationName,
)

# Distinct documents whose parse and validation are kept: frontends send a few dozen.
PARSE_CACHE_SIZE = 512


class FollowGraphSchema(Schema):
    limits = QueryLimits()

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # MaskUnexpectedErrors logs what deserves a log; expected errors are the client's business.
        return None


def build_schema(
    *,
    limits: QueryLimits | None = None,
    introspection: bool = True,
    suggestions: bool = True,
    extensions: Sequence[Any] = (),
    kind: type[FollowGraphSchema] = FollowGraphSchema,
) -> FollowGraphSchema:
    """The schema, with the query limits, and introspection and "did you mean" suggestions on or off;
    of class `kind` (schema/federation.py builds a federation subgraph's with it)."""
    limits = limits or QueryLimits()
    # Order matters: the checks of a document's shape (operation name, limits) run before its
    # validation, so that a document built to wear validation out is refused by its shape; codes
    # are given before errors are masked.
    standard: list[Any] = [
        MaskUnexpectedErrors,
        ErrorCodes,
        partial(CapErrors, limits.max_errors),
        partial(MaxTokensLimiter, max_token_count=limits.max_tokens),
        partial(ParserCache, maxsize=PARSE_CACHE_SIZE),
        RequireOperationName,
        RecordOperationName,
        partial(EnforceQueryLimits, limits),
        partial(CappedValidation, limits.max_errors, PARSE_CACHE_SIZE),
    ]
    if not introspection:
        standard.append(DisableIntrospection)
    if not suggestions:
        standard.append(HideSuggestions)
    built = kind(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        types=[User],
        config=StrawberryConfig(scalar_map=SCALAR_MAP, disable_field_suggestions=not suggestions),
        extensions=[*standard, *extensions],
        execution_context_class=AcyclicExecutionContext,
    )
    built.limits = limits
    return built


schema = build_schema()

__all__ = ["FollowGraphSchema", "QueryLimits", "build_schema", "schema"]
