"""Request checks that graphql-core leaves to the transport, validation with a cap on its errors,
and the `extensions.code` of every error, chosen by where the error arose."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from graphql import DocumentNode, GraphQLError, GraphQLSchema, GraphQLSyntaxError, validate
from graphql.validation import ASTValidationRule
from graphql.validation.validate import ValidationAbortedError
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionResult, StreamExecutionResult

from followgraph.resolvers.errors import BAD_USER_INPUT, INTERNAL_SERVER_ERROR
from followgraph.schema.document import STRAWBERRY_RULES, core_schema, operations_of, provided_operation_name

GRAPHQL_PARSE_FAILED = "GRAPHQL_PARSE_FAILED"
GRAPHQL_VALIDATION_FAILED = "GRAPHQL_VALIDATION_FAILED"
Rules = tuple[type[ASTValidationRule], ...]
Validator = Callable[[GraphQLSchema, DocumentNode, Rules], list[GraphQLError]]


class RecordOperationName(SchemaExtension):
    """Tells the context which operation of the document runs (for logs and metrics)."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context.context
        if hasattr(context, "operation_name"):
            context.operation_name = self.execution_context.operation_name
        yield


class RequireOperationName(SchemaExtension):
    """A document with several operations must say which to run (Strawberry would run the first)."""

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if (
            provided_operation_name(context) is None
            and document is not None
            and len(operations_of(document)) > 1
        ):
            error = GraphQLError(
                "The document has several operations: give the operation name to run in `operationName`."
            )
            # Set before validation runs, so the document is refused without being validated.
            context.pre_execution_errors = [error]
        yield


class CappedValidation(SchemaExtension):
    """Validation that stops after `max_errors` errors, remembered per document (it replaces
    Strawberry's ValidationCache, which cannot pass graphql-core a cap)."""

    def __init__(self, max_errors: int, cache_size: int) -> None:
        self.validate = _validator(max_errors, cache_size)

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        # Checks before this one (limits, operation name) may have refused the document already.
        if context.pre_execution_errors is None and context.graphql_document is not None:
            context.pre_execution_errors = self.validate(
                core_schema(context.schema), context.graphql_document, tuple(context.validation_rules)
            )
        yield


@lru_cache(maxsize=8)
def _validator(max_errors: int, cache_size: int) -> Validator:
    """One cache per (cap, size): extensions are made per request, their cache must outlive them."""

    def run(schema: GraphQLSchema, document: DocumentNode, rules: Rules) -> list[GraphQLError]:
        errors = validate(schema, document, (*rules, *STRAWBERRY_RULES), max_errors=max_errors)
        return [_explained(error) for error in errors]

    return lru_cache(maxsize=cache_size)(run)


# graphql-core stops validating, with no more than "Validation aborted.", when a document would
# cost it too much work: fields to compare with one another in a selection set (some 700 of the
# same field), fragments spread too often, or nesting past Python's recursion limit.
TOO_COSTLY = (
    "Validation aborted: the document is too costly to validate (too many fields to compare in one "
    "selection set, or fragments spread too often). Ask for fewer fields at a time."
)


def _explained(error: GraphQLError) -> GraphQLError:
    if isinstance(error, ValidationAbortedError) and error.message == "Validation aborted.":
        return GraphQLError(TOO_COSTLY)
    return error


def capped(errors: list[GraphQLError], most: int) -> list[GraphQLError]:
    """`errors` cut to the first `most`, and one more saying so (with the code of the first one
    left out) when there were more: every error list a client gets is at most `most` + 1 long."""
    if len(errors) <= most:
        return errors
    code = (errors[most].extensions or {}).get("code", INTERNAL_SERVER_ERROR)
    notice = GraphQLError(f"Too many errors: only the first {most} are reported.", extensions={"code": code})
    return [*errors[:most], notice]


class CapErrors(SchemaExtension):
    """Cuts the errors of every result to `max_errors` (+1): validation stops at the cap itself, but
    variable coercion stops at graphql-core's own 50, and resolver errors do not stop."""

    def __init__(self, max_errors: int) -> None:
        self.max_errors = max_errors

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = capped(list(result.errors), self.max_errors)

    def on_stream_result(self, result: StreamExecutionResult) -> Iterator[None]:
        # Subscriptions: each result they send, the first (refused before execution) included.
        if isinstance(result, ExecutionResult) and result.errors:
            result.errors = capped(list(result.errors), self.max_errors)
        yield


class ErrorCodes(SchemaExtension):
    """Gives every error without a code the one for where it arose: the parser, validation,
    variable coercion (no path) or a resolver (a path). (Errors that still have none are
    internal: executor/execute.py says so.)"""

    def on_validate(self) -> Iterator[None]:
        yield
        for error in self.execution_context.pre_execution_errors or ():
            _code(error, GRAPHQL_VALIDATION_FAILED)

    def on_execute(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        for error in (result.errors if result is not None else None) or ():
            if error.path is None:
                _code(error, BAD_USER_INPUT)  # variables the operation cannot take
            else:
                _code(error, INTERNAL_SERVER_ERROR if error.original_error is not None else BAD_USER_INPUT)

    def on_operation(self) -> Iterator[None]:
        # A parse error leaves the parser cache's hook as an exception, which Strawberry turns
        # into the result after the operation's hooks have ended.
        try:
            yield
        except GraphQLSyntaxError as error:
            _code(error, GRAPHQL_PARSE_FAILED)
            raise


def _code(error: GraphQLError, code: str) -> None:
    if not (error.extensions or {}).get("code"):
        error.extensions = {**(error.extensions or {}), "code": code}


_SUGGESTION = re.compile(r"\s*Did you mean [^?]*\?")


class HideSuggestions(SchemaExtension):
    """Removes graphql-core's "Did you mean ...?" hints from every error (they name schema members
    that introspection, when off, would hide)."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is not None and result.errors:
            result.errors = [_without_suggestion(error) for error in result.errors]


def _without_suggestion(error: GraphQLError) -> GraphQLError:
    if "Did you mean" not in error.message:
        return error
    return GraphQLError(
        _SUGGESTION.sub("", error.message),
        nodes=error.nodes,
        path=error.path,
        original_error=error.original_error,
        extensions=error.extensions,
    )
