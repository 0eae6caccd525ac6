"""Compiled plans at run time: answering a known read document without graphql-core.

graphql-core executes a document field by field: for a page of 20 fans that is some 150 resolver
calls, awaitables and completions, most of the server's time per request (see bench/benchmarks.md).
A plan (made by executor/compiler.py from a document that already ran without error) knows the
fields the document selects, by response key, with their arguments as constants or variables. It
loads through the same resolver functions, so it makes the same Redis round trips: batched through
the request's DataLoaders when fields run side by side, or straight to the store when each read
waits for the one before. It then builds the response dictionary directly, with the values and
serializers the schema declares.

A plan never decides an error: when anything goes wrong (a bad variable, id or cursor, a page
size out of range) it raises Fallback and the general executor answers, with the error the client
would have got anyway. Reads write nothing, so running a request's reads twice changes nothing.
The one exception is Redis failing under a plan of one root field: the plan answers as the
general executor would (that field null, a masked error), rather than waiting on a failing Redis
a second time.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from graphql import DocumentNode, ExecutionResult, FieldNode, GraphQLError, GraphQLSchema
from redis.exceptions import RedisError

from followgraph.executor.variables import Variables, VariablesError
from followgraph.resolvers import lists, users
from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import ApiError
from followgraph.schema.declared import PROFILE, Wants
from followgraph.schema.document import Argument
from followgraph.schema.errors import MaskUnexpectedErrors
from followgraph.schema.limits import QueryLimits, measure
from followgraph.store import ListKind, Page, UserColumns, UserFacts

T = TypeVar("T")
_PAGING = ("first", "after", "last", "before")


class Fallback(Exception):
    """The plan cannot answer this request as the general executor would: run that instead."""


class _Failed(Exception):
    """Redis failed under the field at `path`: answered as the general executor answers it."""

    def __init__(self, error: Exception, path: list[str], node: FieldNode) -> None:
        super().__init__(str(error))
        self.error = error
        self.path = path
        self.node = node


@dataclass(frozen=True, slots=True)
class ListPlan:
    """One connection field of a root user."""

    key: str
    kind: ListKind
    arguments: dict[str, Argument]
    wants: Wants
    build: Callable[[Page, list[UserFacts]], dict[str, Any]]
    node: FieldNode
    # The same from the page's users in columns, when all the fields selected have a column form.
    columns: Callable[[Page, UserColumns], dict[str, Any]] | None = None
    # The page's arguments the document gives (first, after, last, before), by name.
    paging: tuple[tuple[str, Argument], ...] = dataclasses.field(init=False, default=())

    def __post_init__(self) -> None:
        paging = tuple((name, self.arguments[name]) for name in _PAGING if name in self.arguments)
        object.__setattr__(self, "paging", paging)


@dataclass(frozen=True, slots=True)
class UserPlan:
    """A root user: what to load for it, its lists, and how to build its dictionary."""

    wants: Wants
    lists: tuple[ListPlan, ...]
    build: Callable[[UserFacts, dict[str, Any]], dict[str, Any]]
    # What to load of the user and of its one list's users together (with a profile, which tells
    # whether the user exists): see _root_and_list.
    with_list: Wants = PROFILE


@dataclass(frozen=True, slots=True)
class RootField:
    key: str
    user_id: Argument | None  # None: the viewer
    plan: UserPlan | None  # None: __typename
    node: FieldNode


@dataclass(frozen=True, slots=True)
class Plan:
    operation_name: str | None
    variables: Variables
    roots: tuple[RootField, ...]
    # Whether the cost limit must be checked per request (the worst case of any variables exceeds it).
    check_cost: bool
    document: DocumentNode
    # One root user with at most one list: its reads follow one another, so there is nothing to
    # batch and they go to the store directly, without DataLoader futures and tasks.
    batched: bool

    async def run(
        self,
        context: Context,
        variables: Mapping[str, Any] | None,
        schema: GraphQLSchema,
        limits: QueryLimits,
    ) -> ExecutionResult:
        """The response's data, and errors when Redis failed; Fallback when the general executor
        must answer instead."""
        values = coerce_variables(self.variables, variables)
        if self.check_cost:
            try:
                measure(
                    schema, self.document, limits, operation_name=self.operation_name, variables=variables
                )
            except ApiError:
                raise Fallback from None
        context.operation_name = self.operation_name
        try:
            if len(self.roots) == 1:
                results = [await _root(self.roots[0], context, values, self.batched)]
            else:
                results = await _all(_root(root, context, values, True) for root in self.roots)
        except Fallback:
            raise
        except _Failed as failed:
            if len(self.roots) > 1:
                raise Fallback from failed.error
            # One root field, nullable, and the lists below it are not: the root becomes null.
            # (Only a read that runs alone fails this way: the root's own, or its only list's.)
            # Answering here rather than running the reads again halves the wait of a request
            # when Redis is down or slow.
            error = GraphQLError(
                str(failed.error), nodes=[failed.node], path=failed.path, original_error=failed.error
            )
            masked = MaskUnexpectedErrors.mask(error, context.request_id)
            return ExecutionResult({self.roots[0].key: None}, [masked])
        except Exception as exc:  # the general executor reports it as it should be reported
            raise Fallback from exc
        return ExecutionResult({root.key: result for root, result in zip(self.roots, results, strict=True)})


def coerce_variables(declared: Variables, variables: Mapping[str, Any] | None) -> Any:
    """The request's variables as the operation declares them; Fallback when they do not fit (the
    general executor says how)."""
    try:
        return declared.coerce(variables)
    except VariablesError:
        raise Fallback from None


async def _all(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """Run side by side (so their loads share DataLoader batches); the first failure is raised
    once all have finished, so that none is left running behind the fallback."""
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return cast("list[T]", results)


async def _root(root: RootField, context: Context, variables: Mapping[str, Any], batched: bool) -> Any:
    if root.plan is None:
        return "Query"
    if root.user_id is None:
        user_id = context.viewer_id
        if user_id is None:
            return None
    else:
        user_id = root.user_id.get(variables)
    plan, needs = root.plan, root.plan.wants
    if not batched and len(plan.lists) == 1:  # the page's query checks the id
        return await _root_and_list(root, plan, plan.lists[0], context, user_id, variables)
    if root.user_id is not None:
        user_id = users.checked_user_id(user_id)
    try:
        [facts] = await users.registered(context, [user_id], needs, batched=batched)
    except (RedisError, OSError) as exc:
        raise _Failed(exc, [root.key], root.node) from exc
    if facts is None:
        return None
    if not plan.lists:
        return plan.build(facts, {})
    if len(plan.lists) == 1:
        field = plan.lists[0]
        try:
            connections = [await _connection(field, context, facts.user_id, variables, batched)]
        except (RedisError, OSError) as exc:
            raise _Failed(exc, [root.key, field.key], field.node) from exc
    else:
        connections = await _all(
            _connection(field, context, facts.user_id, variables, True) for field in plan.lists
        )
    return plan.build(facts, {field.key: c for field, c in zip(plan.lists, connections, strict=True)})


async def _root_and_list(
    root: RootField,
    plan: UserPlan,
    field: ListPlan,
    context: Context,
    user_id: str,
    variables: Mapping[str, Any],
) -> Any:
    """A root user and its one list in two round trips: the page, then the root's facts together
    with its users'. The page is read before the root is known to exist (a missing user's lists
    are empty, and reads change nothing), which saves the round trip of asking first. The page's
    users are read in columns when the list's plan can build from them.

    This is the usual document (a user's fans or following page), so it goes to the store itself
    rather than through _page, list_page and the users' resolvers: each call is cheap, but with
    many requests in flight a page's distinct code and data are what its time goes to (the figures:
    docs/performance.md, "Where A's CPU goes beyond B's")."""
    store = context.store
    query = lists.list_query(context, field.kind, user_id, **_arguments(field, variables))
    try:
        [page] = await store.pages([query])
    except (RedisError, OSError) as exc:
        raise _Failed(exc, [root.key, field.key], field.node) from exc
    ids = [user_id, *page.members]
    # The connection is built before the root is known to exist: a missing root's lists are empty.
    try:
        if field.columns is None:
            loaded = await store.facts(context.viewer_id, ids, plan.with_list)
            facts, connection = loaded[0], field.build(page, loaded[1:])
        else:
            facts, listed = (await store.columns(context.viewer_id, ids, plan.with_list)).split_first()
            connection = field.columns(page, listed)
    except (RedisError, OSError) as exc:
        raise _Failed(exc, [root.key], root.node) from exc
    if facts.profile is None:
        if user_id is not None and users.sees_accounts_off(context, user_id):
            return await _root(root, context, variables, True)  # the account may be off: its own view
        return None
    return plan.build(facts, {field.key: connection})


def _arguments(field: ListPlan, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The list's first, after, last and before, None where the document gives none."""
    return {name: argument.get(variables) for name, argument in field.paging}


async def _page(
    field: ListPlan, context: Context, user_id: str, variables: Mapping[str, Any], batched: bool
) -> Page:
    query = lists.list_query(context, field.kind, user_id, **_arguments(field, variables))
    return await lists.list_page(context, query, batched=batched)


async def _connection(
    field: ListPlan, context: Context, user_id: str, variables: Mapping[str, Any], batched: bool
) -> dict[str, Any]:
    page = await _page(field, context, user_id, variables, batched)
    ids = page.members
    needs = field.wants
    loaded: list[UserFacts]
    if ids and needs.any:
        loaded = await users.facts(context, ids, needs, batched=batched)
    else:
        loaded = [UserFacts(user_id) for user_id in ids]
    return field.build(page, loaded)
