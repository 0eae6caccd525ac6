"""Precompiled execution of the read operations frontends send over and over.

graphql-core executes a document field by field: for a page of 20 fans that is some 150 resolver
calls, awaitables and completions, most of the server's time per request (see bench/benchmarks.md).
Once a query document has run through the general executor without an error, it is compiled here
into a plan: the fields it selects, by response key, with their arguments as constants or
variable names. Later requests with the same document run the plan. It loads through the same
resolver functions, so it makes the same Redis round trips: batched through the request's
DataLoaders when fields run side by side, or straight to the store when each read waits for the
one before. It then builds the response dictionary directly from what was loaded.

A plan covers what the hot paths select and nothing else: `viewer` and `user(userId)` at the root,
the plain User fields, and the `following`, `fans` and `mutuals` connections of those root users, with
their edges, nodes and pageInfo. Anything else (other root fields, nested connections, directives,
introspection, mutations, repeated response keys) leaves the document to the general executor.
A plan never decides an error: when anything goes wrong (a bad variable, id or cursor, a page
size out of range) it stops and the request runs through the general executor, which gives the
error the client would have got anyway. Reads write nothing, so running a request's reads twice
changes nothing. The one exception is Redis failing under a plan of one root field: the plan
answers as the general executor would (that field null, a masked error), rather than waiting on
a failing Redis a second time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLEnumType,
    GraphQLError,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    parse,
    specified_scalar_types,
    value_from_ast_untyped,
)
from graphql.execution.values import get_variable_values
from redis.exceptions import RedisError

from followgraph.resolvers import lists, users
from followgraph.resolvers.context import Context
from followgraph.schema.errors import MaskUnexpectedErrors
from followgraph.schema.limits import LimitError, QueryLimits, measure
from followgraph.schema.scalars import SCALAR_MAP, EpochMillis
from followgraph.schema.selection import Wants
from followgraph.schema.user import USER_VALUES
from followgraph.store import Entry, ListKind, Page, UserFacts

T = TypeVar("T")
CUSTOM_SCALARS = {d.name: d.serialize for d in SCALAR_MAP.values() if d.serialize is not None}

# Distinct documents kept (compiled, or known not to compile).
CACHE_SIZE = 512


class Fallback(Exception):
    """The plan cannot answer this request as the general executor would: run that instead."""


class NotCompilable(Exception):
    """The document selects something plans do not cover."""


class _Failed(Exception):
    """Redis failed under the field at `path`: answered as the general executor answers it."""

    def __init__(self, error: Exception, path: list[str], node: FieldNode) -> None:
        super().__init__(str(error))
        self.error = error
        self.path = path
        self.node = node


def _serializer(types: GraphQLSchema, type_name: str, field: str) -> Callable[[Any], Any] | None:
    """How the general executor turns the field's value into JSON: through the serializer of an
    enum (remembered per member: there are few) or of a custom scalar. None for the built-in
    scalars, whose values are JSON already."""
    parent = types.type_map[type_name]
    assert isinstance(parent, GraphQLObjectType)
    named = get_named_type(parent.fields[field].type)
    if isinstance(named, GraphQLEnumType):
        names: dict[Any, Any] = {}
        serialize_enum = named.serialize

        def member(value: Any) -> Any:
            if value is None:
                return None
            if value not in names:
                names[value] = serialize_enum(value)
            return names[value]

        return member
    if isinstance(named, GraphQLScalarType) and named.name not in specified_scalar_types:
        # The project's own serializer, which Strawberry's scalar wraps.
        serialize = CUSTOM_SCALARS.get(named.name, named.serialize)
        return lambda value: None if value is None else serialize(value)
    return None


def _user_getter(types: GraphQLSchema, field: str) -> Callable[[UserFacts], Any]:
    """The JSON value of a plain User field, straight from what was loaded."""
    if field == "__typename":
        return lambda facts: "User"
    _, value = USER_VALUES[field]
    serialize = _serializer(types, "User", field)
    if serialize is None:
        return value
    return lambda facts: serialize(value(facts))


LISTS = {"following": ListKind.FOLLOWING, "fans": ListKind.FANS, "mutuals": ListKind.MUTUAL}
LIST_ARGUMENTS = ("first", "after", "last", "before")
PAGE_INFO = {
    "hasNextPage": "has_next",
    "hasPreviousPage": "has_previous",
    "startCursor": "start_cursor",
    "endCursor": "end_cursor",
}


@dataclass(frozen=True, slots=True)
class Argument:
    variable: str | None
    value: Any

    def get(self, variables: Mapping[str, Any]) -> Any:
        return self.value if self.variable is None else variables.get(self.variable)


@dataclass(frozen=True, slots=True)
class ListPlan:
    """One connection field of a root user."""

    key: str
    kind: ListKind
    arguments: dict[str, Argument]
    wants: Wants
    build: Callable[[Page, list[UserFacts]], dict[str, Any]]
    node: FieldNode


@dataclass(frozen=True, slots=True)
class UserPlan:
    """A root user: what to load for it, its lists, and how to build its dictionary."""

    wants: Wants
    lists: tuple[ListPlan, ...]
    build: Callable[[UserFacts, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RootField:
    key: str
    user_id: Argument | None  # None: the viewer
    plan: UserPlan | None  # None: __typename
    node: FieldNode


@dataclass(frozen=True, slots=True)
class Plan:
    operation_name: str | None
    variable_definitions: Any
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
        coerced = get_variable_values(schema, self.variable_definitions, dict(variables or {}))
        if isinstance(coerced, list):
            raise Fallback
        values = coerced.coerced
        if self.check_cost:
            try:
                measure(
                    schema, self.document, limits, operation_name=self.operation_name, variables=variables
                )
            except LimitError:
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
    try:
        [facts] = await users.registered(
            context, [user_id], relation=needs.relation, counts=needs.counts, batched=batched
        )
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


async def _connection(
    field: ListPlan, context: Context, user_id: str, variables: Mapping[str, Any], batched: bool
) -> dict[str, Any]:
    arguments = {name: argument.get(variables) for name, argument in field.arguments.items()}
    page = await lists.list_page(
        context,
        field.kind,
        user_id,
        first=arguments.get("first"),
        after=arguments.get("after"),
        last=arguments.get("last"),
        before=arguments.get("before"),
        batched=batched,
    )
    ids = [entry.user_id for entry in page.entries]
    needs = field.wants
    loaded: list[UserFacts]
    if ids and (needs.profile or needs.relation or needs.counts):
        loaded = await users.facts(
            context, ids, profile=needs.profile, relation=needs.relation, counts=needs.counts, batched=batched
        )
    else:
        loaded = [UserFacts(user_id) for user_id in ids]
    return field.build(page, loaded)


# -- compiling ------------------------------------------------------------------------------------


class _Compiler:
    def __init__(self, types: GraphQLSchema, document: DocumentNode) -> None:
        self.types = types
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }

    def fields(self, selection_set: SelectionSetNode | None, type_name: str) -> list[FieldNode]:
        """The fields of a selection set with fragments on `type_name` flattened; NotCompilable for
        directives, fragments on other types, or a response key that appears twice."""
        if selection_set is None:
            raise NotCompilable("a composite field without a selection")
        flat: list[FieldNode] = []
        self._flatten(selection_set, type_name, flat, set())
        # A leaf selected twice under one key is answered once, where it first appears (as
        # graphql-core merges it); a repeated key with arguments or a selection is not compiled.
        out: dict[str, FieldNode] = {}
        for node in flat:
            first = out.setdefault(_key(node), node)
            if first is not node and not (_plain_leaf(first) and first.name.value == node.name.value):
                raise NotCompilable("a response key selected twice")
        return list(out.values())

    def _flatten(
        self, selections: SelectionSetNode, type_name: str, out: list[FieldNode], seen: set[str]
    ) -> None:
        for node in selections.selections:
            if node.directives:
                raise NotCompilable("directives")
            if isinstance(node, FieldNode):
                out.append(node)
            elif isinstance(node, InlineFragmentNode):
                if node.type_condition is not None and node.type_condition.name.value != type_name:
                    raise NotCompilable("a fragment on another type")
                self._flatten(node.selection_set, type_name, out, seen)
            elif isinstance(node, FragmentSpreadNode):
                name = node.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in seen or fragment.directives:
                    raise NotCompilable("an unusable fragment")
                if fragment.type_condition.name.value != type_name:
                    raise NotCompilable("a fragment on another type")
                self._flatten(fragment.selection_set, type_name, out, seen | {name})

    def user(self, node: FieldNode, *, with_lists: bool) -> tuple[UserPlan, int]:
        """The plan of a User selection, and how many connections it holds."""
        list_plans: list[ListPlan] = []
        # (response key, getter of a scalar, or None for a list)
        order: list[tuple[str, Callable[[UserFacts], Any] | None]] = []
        names: set[str] = set()
        for field in self.fields(node.selection_set, "User"):
            name, key = field.name.value, _key(field)
            if name == "__typename" or name in USER_VALUES:
                order.append((key, _user_getter(self.types, name)))
                names.add(name)
            elif name in LISTS and with_lists:
                list_plans.append(self.connection(field, LISTS[name]))
                order.append((key, None))
            else:
                raise NotCompilable(f"User.{name} here")
        wants = Wants.of(names)

        def build(facts: UserFacts, connections: dict[str, Any]) -> dict[str, Any]:
            return {key: connections[key] if get is None else get(facts) for key, get in order}

        return UserPlan(wants, tuple(list_plans), build), len(list_plans)

    def connection(self, node: FieldNode, kind: ListKind) -> ListPlan:
        arguments: dict[str, Argument] = {}
        for argument in node.arguments or ():
            name = argument.name.value
            if name not in LIST_ARGUMENTS:
                raise NotCompilable(f"argument {name}")
            value = argument.value
            if isinstance(value, VariableNode):
                arguments[name] = Argument(value.name.value, None)
            else:
                arguments[name] = Argument(None, value_from_ast_untyped(value))
        parts: list[tuple[str, Callable[[Page, list[UserFacts]], Any]]] = []
        wants = Wants()
        for field in self.fields(node.selection_set, "FollowConnection"):
            name, key = field.name.value, _key(field)
            if name == "__typename":
                parts.append((key, lambda page, users: "FollowConnection"))
            elif name == "totalCount":
                parts.append((key, lambda page, users: page.total))
            elif name == "pageInfo":
                parts.append((key, self._page_info(field)))
            elif name == "nodes":
                plan, _ = self.user(field, with_lists=False)
                wants = _either(wants, plan.wants)
                parts.append((key, _nodes(plan)))
            elif name == "edges":
                edge, node_wants, relation = self._edges(field)
                wants = _either(wants, Wants(relation=relation), node_wants)
                parts.append((key, edge))
            else:
                raise NotCompilable(f"FollowConnection.{name}")

        def build(page: Page, users: list[UserFacts]) -> dict[str, Any]:
            return {key: part(page, users) for key, part in parts}

        return ListPlan(_key(node), kind, arguments, wants, build, node)

    def _edges(self, node: FieldNode) -> tuple[Callable[[Page, list[UserFacts]], Any], Wants, bool]:
        items: list[tuple[str, Callable[[Entry, UserFacts], Any]]] = []
        node_wants = Wants()
        relation = False
        for field in self.fields(node.selection_set, "FollowEdge"):
            name, key = field.name.value, _key(field)
            if name == "node":
                plan, _ = self.user(field, with_lists=False)
                node_wants = plan.wants
                items.append((key, _edge_node(plan)))
            elif name in EDGE_VALUES:
                relation = relation or name == "relationship"
                items.append((key, _edge_getter(self.types, name)))
            else:
                raise NotCompilable(f"FollowEdge.{name}")

        def build(page: Page, users: list[UserFacts]) -> list[dict[str, Any]]:
            return [
                {key: get(entry, user) for key, get in items}
                for entry, user in zip(page.entries, users, strict=True)
            ]

        return build, node_wants, relation

    def _page_info(self, node: FieldNode) -> Callable[[Page, list[UserFacts]], Any]:
        items: list[tuple[str, str]] = []
        for field in self.fields(node.selection_set, "PageInfo"):
            name = field.name.value
            if name == "__typename":
                items.append((_key(field), "__typename"))
            elif name in PAGE_INFO:
                items.append((_key(field), PAGE_INFO[name]))
            else:
                raise NotCompilable(f"PageInfo.{name}")

        def build(page: Page, users: list[UserFacts]) -> dict[str, Any]:
            return {
                key: "PageInfo" if attribute == "__typename" else getattr(page, attribute)
                for key, attribute in items
            }

        return build


_relationship = USER_VALUES["relationship"][1]
# FollowEdge's plain fields from a page entry and its user's facts, as FollowConnection.load sets them.
EDGE_VALUES: dict[str, Callable[[Entry, UserFacts], Any]] = {
    "__typename": lambda entry, user: "FollowEdge",
    "cursor": lambda entry, user: entry.cursor,
    "followedAt": lambda entry, user: EpochMillis(entry.at),
    "relationship": lambda entry, user: _relationship(user),
}


def _edge_getter(types: GraphQLSchema, field: str) -> Callable[[Entry, UserFacts], Any]:
    value = EDGE_VALUES[field]
    if field == "__typename":
        return value
    serialize = _serializer(types, "FollowEdge", field)
    if serialize is None:
        return value
    return lambda entry, user: serialize(value(entry, user))


def _edge_node(plan: UserPlan) -> Callable[[Entry, UserFacts], Any]:
    return lambda entry, user: plan.build(user, {})


def _plain_leaf(node: FieldNode) -> bool:
    return not node.arguments and node.selection_set is None


def _key(node: FieldNode) -> str:
    return node.alias.value if node.alias is not None else node.name.value


def _either(*needs: Wants) -> Wants:
    return Wants(
        profile=any(n.profile for n in needs),
        relation=any(n.relation for n in needs),
        counts=any(n.counts for n in needs),
    )


def _nodes(plan: UserPlan) -> Callable[[Page, list[UserFacts]], Any]:
    def build(page: Page, users: list[UserFacts]) -> list[dict[str, Any]]:
        return [plan.build(user, {}) for user in users]

    return build


def compile_document(
    types: GraphQLSchema, query: str, operation_name: str | None, limits: QueryLimits
) -> Plan:
    """The plan of `operation_name` in `query` (a document that already ran without error)."""
    document = parse(query)
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is None:
        if len(operations) != 1:
            raise NotCompilable("no single operation")
        operation = operations[0]
    else:
        found = [o for o in operations if o.name is not None and o.name.value == operation_name]
        if len(found) != 1:
            raise NotCompilable("no such operation")
        operation = found[0]
    if operation.operation is not OperationType.QUERY or operation.directives:
        raise NotCompilable("not a plain query")
    compiler = _Compiler(types, document)
    roots: list[RootField] = []
    connections = 0
    for node in compiler.fields(operation.selection_set, "Query"):
        name, key = node.name.value, _key(node)
        if name == "__typename":
            roots.append(RootField(key, None, None, node))
            continue
        arguments = node.arguments or ()
        if name == "viewer" and not arguments:
            user_id = None
        elif name == "user" and len(arguments) == 1 and arguments[0].name.value == "userId":
            value = arguments[0].value
            if isinstance(value, VariableNode):
                user_id = Argument(value.name.value, None)
            else:
                user_id = Argument(None, value_from_ast_untyped(value))
        else:
            raise NotCompilable(f"Query.{name}")
        plan, lists_here = compiler.user(node, with_lists=True)
        connections += lists_here
        roots.append(RootField(key, user_id, plan, node))
    # Every connection's cost is its page size (its nodes hold no lists), and a page size above the
    # largest allowed stops the plan; beyond that worst case, check each request's variables.
    worst = connections * limits.max_page_size
    return Plan(
        operation.name.value if operation.name else None,
        operation.variable_definitions or (),
        tuple(roots),
        worst > limits.max_cost,
        document,
        batched=len(roots) > 1 or connections > 1,
    )


class Plans:
    """Compiled plans by (document, operation name); None marks a document that does not compile."""

    def __init__(self, schema: GraphQLSchema, limits: QueryLimits, size: int = CACHE_SIZE) -> None:
        self.schema = schema
        self.limits = limits
        self.size = size
        self._plans: dict[tuple[str, str | None], Plan | None] = {}

    def get(self, query: str, operation_name: str | None) -> Plan | None:
        return self._plans.get((query, operation_name))

    def known(self, query: str, operation_name: str | None) -> bool:
        return (query, operation_name) in self._plans

    def learn(self, query: str, operation_name: str | None) -> None:
        """Compile a document that just ran through the general executor without an error."""
        if len(self._plans) >= self.size:
            self._plans.clear()
        try:
            plan: Plan | None = compile_document(self.schema, query, operation_name, self.limits)
        except NotCompilable:
            plan = None
        self._plans[(query, operation_name)] = plan

    async def run(self, plan: Plan, context: Context, variables: Mapping[str, Any] | None) -> ExecutionResult:
        return await plan.run(context, variables, self.schema, self.limits)
