"""Compiled plans at run time: answering a known read document without graphql-core.

graphql-core executes a document field by field: for a page of 20 fans that is some 150 resolver
calls, awaitables and completions, most of the server's time per request (see bench/benchmarks.md).
A plan (made by schema/compiler.py from a document that already ran without error) knows the
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
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from graphql import DocumentNode, ExecutionResult, FieldNode, GraphQLError, GraphQLSchema
from redis.exceptions import RedisError

from followgraph.resolvers import lists, users
from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import ApiError
from followgraph.schema.declared import PROFILE, Wants
from followgraph.schema.document import Argument
from followgraph.schema.errors import MaskUnexpectedErrors
from followgraph.schema.limits import QueryLimits, measure
from followgraph.schema.variables import Variables, VariablesError
from followgraph.store import ListKind, Page, UserColumns, UserFacts

T = TypeVar("T")


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
    # The usual document, one root user and its one list built from columns: run by _one_list.
    one_list: _OneList | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "one_list", _OneList.of(self))

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
            if self.one_list is not None:
                results = [await self.one_list.run(context, values)]
            elif len(self.roots) == 1:
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
        user_id = users.checked_user_id(root.user_id.get(variables))
    plan, needs = root.plan, root.plan.wants
    if not batched and len(plan.lists) == 1:
        return await _root_and_list(root, plan, plan.lists[0], context, user_id, variables)
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
    users are read in columns when the list's plan can build from them."""
    try:
        page = await _page(field, context, user_id, variables, batched=False)
    except (RedisError, OSError) as exc:
        raise _Failed(exc, [root.key, field.key], field.node) from exc
    ids = [user_id, *page.members]
    # The connection is built before the root is known to exist: a missing root's lists are empty.
    try:
        if field.columns is None:
            loaded = await users.facts(context, ids, plan.with_list, batched=False)
            facts, connection = loaded[0], field.build(page, loaded[1:])
        else:
            facts, listed = (await users.columns(context, ids, plan.with_list)).split_first()
            connection = field.columns(page, listed)
    except (RedisError, OSError) as exc:
        raise _Failed(exc, [root.key], root.node) from exc
    if facts.profile is None:
        return None
    return plan.build(facts, {field.key: connection})


@dataclass(frozen=True, slots=True)
class _OneList:
    """_root and _root_and_list for a plan of one root user and its one list built from columns
    (the usual document: a user's fans or following page): the same checks and reads, with none
    of the calls between the request and its two round trips. Each call is cheap, but at many
    requests in flight a page's distinct code and data are what its time goes to (README,
    "Instructions understate what A's layers cost")."""

    root: RootField
    plan: UserPlan
    field: ListPlan
    columns: Callable[[Page, UserColumns], dict[str, Any]]
    # The list's first, after, last and before, as the document gives them.
    arguments: tuple[Argument | None, Argument | None, Argument | None, Argument | None]

    @classmethod
    def of(cls, plan: Plan) -> _OneList | None:
        if plan.batched or len(plan.roots) != 1:
            return None
        root = plan.roots[0]
        user = root.plan
        if user is None or len(user.lists) != 1 or user.lists[0].columns is None:
            return None
        field = user.lists[0]
        assert field.columns is not None
        given = field.arguments
        arguments = (given.get("first"), given.get("after"), given.get("last"), given.get("before"))
        return cls(root, user, field, field.columns, arguments)

    async def run(self, context: Context, variables: Mapping[str, Any]) -> Any:
        root, plan, field = self.root, self.plan, self.field
        if root.user_id is None:
            user_id = context.viewer_id
            if user_id is None:
                return None
        else:
            user_id = root.user_id.get(variables)
        first, after, last, before = (None if a is None else a.get(variables) for a in self.arguments)
        most = context.max_page_size
        if (first is not None and not 0 <= first <= most) or (last is not None and not 0 <= last <= most):
            raise Fallback  # the general executor says which and why
        store, viewer = context.store, context.viewer_id
        # A bad id or cursor raises here, before any read, and the plan falls back.
        query = store.list_query(
            field.kind,
            user_id,
            first=first,
            after=after,
            last=last,
            before=before,
            viewer=viewer,
            viewer_checked=True,
        )
        try:
            [page] = await store.pages([query])
        except (RedisError, OSError) as exc:
            raise _Failed(exc, [root.key, field.key], field.node) from exc
        try:
            read = await store.columns(viewer, [user_id, *page.members], plan.with_list)
        except (RedisError, OSError) as exc:
            raise _Failed(exc, [root.key], root.node) from exc
        facts, listed = read.split_first()
        if facts.profile is None:
            return None
        return plan.build(facts, {field.key: self.columns(page, listed)})


async def _page(
    field: ListPlan, context: Context, user_id: str, variables: Mapping[str, Any], batched: bool
) -> Page:
    arguments = {name: argument.get(variables) for name, argument in field.arguments.items()}
    return await lists.list_page(
        context,
        field.kind,
        user_id,
        first=arguments.get("first"),
        after=arguments.get("after"),
        last=arguments.get("last"),
        before=arguments.get("before"),
        batched=batched,
    )


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
