"""Compiling a document into a plan (executor/plan.py runs read plans, executor/mutation_plan.py
mutation plans).

A plan covers what the hot paths select and nothing else: `viewer` and `user(userId)` at the root,
the plain User fields, and the list connections of those root users (User fields declared with
a list kind), with their edges, nodes and pageInfo; or one `follow` or `unfollow` with its
payload (its users' plain fields). Anything else (other root fields and mutations, nested
connections, directives, introspection, repeated response keys) raises NotCompilable and leaves
the document to the general executor. Every value comes from the fields' declarations
(schema/declared.py) and is serialized by the schema's own serializers, as the general executor
would.

A connection gets two builders: one over its page and an object per user (UserFacts), and, when
every field selected of its edges and users declares a column, one over its page and the users'
columns (store/graph/columns.py), which zips those columns into the edges. A plan whose reads follow
one another (one root user, one list) uses the second when there is one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLEnumType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLSchema,
    InlineFragmentNode,
    ObjectValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    get_named_type,
    parse,
    specified_scalar_types,
)

from followgraph.executor.codegen import Builder, display
from followgraph.executor.mutation_plan import Action, MutationPlan
from followgraph.executor.plan import ListPlan, Plan, RootField, UserPlan
from followgraph.executor.variables import Variables
from followgraph.resolvers import mutations
from followgraph.resolvers.mutations import Failure, FollowOutcome
from followgraph.schema.declared import PROFILE, Values, Wants
from followgraph.schema.document import (
    Argument,
    Fragments,
    UnknownFragmentError,
    arguments_of,
    fields,
    fragments_of,
    operation,
    response_key,
)
from followgraph.schema.enums import Relationship, UserErrorCode
from followgraph.schema.limits import QueryLimits
from followgraph.schema.scalars import SCALAR_MAP
from followgraph.schema.user import CONNECTION, EDGE, PAGE_INFO, USER
from followgraph.store import ListKind, Page, Parts, UserColumns, UserFacts

CUSTOM_SCALARS = {d.name: d.serialize for d in SCALAR_MAP.values() if d.serialize is not None}
LIST_ARGUMENTS = frozenset({"first", "after", "last", "before"})
PAYLOAD = "FollowPayload"


class NotCompilable(Exception):
    """The document selects something plans do not cover."""


class _Names(dict[Any, Any]):
    """An enum's serialized names by value, learnt on first sight (an enum has few members): a
    builder looks a name up with a subscript, without a Python call."""

    def __init__(self, serialize: Callable[[Any], Any]) -> None:
        super().__init__({None: None})
        self.serialize = serialize

    def __missing__(self, value: Any) -> Any:
        name = self[value] = self.serialize(value)
        return name


def _serializer(types: GraphQLSchema, type_name: str, field: str) -> Callable[[Any], Any] | _Names | None:
    """How the general executor turns the field's value into JSON: through the names of an enum
    or the serializer of a custom scalar. None for the built-in scalars, whose values are JSON
    already."""
    parent = types.type_map[type_name]
    assert isinstance(parent, GraphQLObjectType)
    declared = parent.fields[field].type
    named = get_named_type(declared)
    if isinstance(named, GraphQLEnumType):
        return _Names(named.serialize)
    if isinstance(named, GraphQLScalarType) and named.name not in specified_scalar_types:
        # The project's own serializer, which Strawberry's scalar wraps. A non-null field's value is
        # never None (were it, the serializer's error sends the request to the general executor).
        serialize = CUSTOM_SCALARS.get(named.name, named.serialize)
        if isinstance(declared, GraphQLNonNull):
            return serialize
        return lambda value: None if value is None else serialize(value)
    return None


def _enum_names(types: GraphQLSchema, type_name: str, field: str) -> Callable[[Any], Any]:
    """The serializer of an enum field, as a function."""
    names = _serializer(types, type_name, field)
    assert isinstance(names, _Names)
    return names.__getitem__


def _plain_leaf(node: FieldNode) -> bool:
    return not node.arguments and node.selection_set is None


class _Compiler:
    def __init__(self, types: GraphQLSchema, fragments: Fragments) -> None:
        self.types = types
        self.fragments = fragments

    def fields(self, selection_set: SelectionSetNode | None, type_name: str) -> list[FieldNode]:
        """The fields of a selection set with fragments on `type_name` flattened; NotCompilable for
        directives, fragments on other types, or a response key that appears twice."""
        if selection_set is None:
            raise NotCompilable("a composite field without a selection")

        def check(fragment: InlineFragmentNode | FragmentDefinitionNode) -> None:
            if fragment.directives:
                raise NotCompilable("directives")
            condition = fragment.type_condition
            if condition is not None and condition.name.value != type_name:
                raise NotCompilable("a fragment on another type")

        # A leaf selected twice under one key is answered once, where it first appears (as
        # graphql-core merges it); a repeated key with arguments or a selection is not compiled.
        out: dict[str, FieldNode] = {}
        try:
            for node in fields(selection_set, self.fragments, check):
                if node.directives:
                    raise NotCompilable("directives")
                first = out.setdefault(response_key(node), node)
                if first is not node and not (_plain_leaf(first) and first.name.value == node.name.value):
                    raise NotCompilable("a response key selected twice")
        except UnknownFragmentError:
            raise NotCompilable("an unknown fragment") from None
        return list(out.values())

    def value(self, code: Builder, values: Values[Any], name: str, source: str) -> str:
        """The expression of a declared field's JSON value (or __typename) from `source`."""
        if name == "__typename":
            return repr(values.type_name)
        return self.serialized(code, values, name, code.call(values.by_name[name].get, source))

    def serialized(self, code: Builder, values: Values[Any], name: str, expression: str) -> str:
        """`expression`, a declared field's plain value, as JSON."""
        parent = self.types.type_map[values.type_name]
        assert isinstance(parent, GraphQLObjectType)
        if isinstance(get_named_type(parent.fields[name].type), GraphQLObjectType):
            raise NotCompilable(f"{values.type_name}.{name} is an object")
        serialize = _serializer(self.types, values.type_name, name)
        if serialize is None:
            return expression
        if isinstance(serialize, _Names):
            return code.lookup(serialize, expression)
        return code.call(serialize, expression)

    def user(self, node: FieldNode, *, with_lists: bool) -> UserPlan:
        """The plan of a User selection."""
        code = Builder()
        items, wants, list_plans = self.user_items(code, node, "facts", with_lists=with_lists)
        build = code.function(["facts", "connections"], display(items))
        with_list = wants | PROFILE
        if len(list_plans) == 1:
            with_list = with_list | list_plans[0].wants
        return UserPlan(wants, tuple(list_plans), build, with_list)

    def user_items(
        self, code: Builder, node: FieldNode, source: str, *, with_lists: bool
    ) -> tuple[list[tuple[str, str]], Wants, list[ListPlan]]:
        """A User selection's (response key, expression) pairs over the facts `source`, what they
        need loaded, and the plans of its lists (whose dictionaries come in `connections`)."""
        list_plans: list[ListPlan] = []
        items: list[tuple[str, str]] = []
        names: set[str] = set()
        for field in self.fields(node.selection_set, USER.type_name):
            name, key = field.name.value, response_key(field)
            if name == "__typename" or name in USER.by_name:
                items.append((key, self.value(code, USER, name, source)))
                names.add(name)
            elif name in USER.lists and with_lists:
                list_plans.append(self.connection(field, USER.lists[name]))
                items.append((key, f"connections[{key!r}]"))
            else:
                raise NotCompilable(f"User.{name} here")
        return items, USER.needs(names), list_plans

    def leaves(
        self, code: Builder, node: FieldNode, values: Values[Any], source: str
    ) -> list[tuple[str, str]]:
        """(response key, expression) of a selection of declared values only."""
        out = []
        for field in self.fields(node.selection_set, values.type_name):
            name = field.name.value
            if name != "__typename" and name not in values.by_name:
                raise NotCompilable(f"{values.type_name}.{name}")
            out.append((response_key(field), self.value(code, values, name, source)))
        return out

    def connection(self, node: FieldNode, kind: ListKind) -> ListPlan:
        arguments = arguments_of(node)
        if not arguments.keys() <= LIST_ARGUMENTS:
            raise NotCompilable("an argument lists do not take")
        code = Builder()
        edge_names: set[str] = set()
        wants = Wants()

        def nodes(field: FieldNode) -> str:
            nonlocal wants
            items, node_wants, _ = self.user_items(code, field, "user", with_lists=False)
            wants = wants | node_wants
            return f"[{display(items)} for user in users]"

        def edges(field: FieldNode) -> str:
            nonlocal wants
            expression, names, node_wants = self._edges(code, field)
            edge_names.update(names)
            wants = wants | node_wants
            return expression

        parts = self.connection_parts(code, node, nodes, edges)
        build = code.function(["page", "users"], display(parts))
        wants = EDGE.needs(edge_names) | wants
        return ListPlan(response_key(node), kind, arguments, wants, build, node, self.columns(node))

    def connection_parts(
        self,
        code: Builder,
        node: FieldNode,
        nodes: Callable[[FieldNode], str],
        edges: Callable[[FieldNode], str],
    ) -> list[tuple[str, str]]:
        """A connection's (response key, expression) pairs, its nodes and edges by the functions given."""
        parts: list[tuple[str, str]] = []
        for field in self.fields(node.selection_set, CONNECTION.type_name):
            name, key = field.name.value, response_key(field)
            if name == "__typename" or name in CONNECTION.by_name:
                parts.append((key, self.value(code, CONNECTION, name, "page")))
            elif name == "pageInfo":
                parts.append((key, display(self.leaves(code, field, PAGE_INFO, "page"))))
            elif name == "nodes":
                parts.append((key, nodes(field)))
            elif name == "edges":
                parts.append((key, edges(field)))
            else:
                raise NotCompilable(f"FollowConnection.{name}")
        return parts

    def columns(self, node: FieldNode) -> Callable[[Page, UserColumns], dict[str, Any]] | None:
        """The connection's builder from its page and its users in columns (store/graph/columns.py),
        when every field selected of its edges and users declares its column; None otherwise."""
        code = Builder()

        def nodes(field: FieldNode) -> str:
            rows = _Rows(code)
            return rows.comprehension(display(self.user_columns(rows, field)))

        def edges(field: FieldNode) -> str:
            rows = _Rows(code)
            return rows.comprehension(display(self.edge_columns(rows, field)))

        try:
            parts = self.connection_parts(code, node, nodes, edges)
        except NotCompilable:
            return None
        built: Callable[[Page, UserColumns], dict[str, Any]]
        built = code.function(["page", "users"], display(parts))
        return built

    def edge_columns(self, rows: _Rows, node: FieldNode) -> list[tuple[str, str]]:
        items: list[tuple[str, str]] = []
        for field in self.fields(node.selection_set, EDGE.type_name):
            name, key = field.name.value, response_key(field)
            if name == "node":
                items.append((key, display(self.user_columns(rows, field))))
            else:
                items.append((key, self.column(rows, EDGE, name, "page, users")))
        return items

    def user_columns(self, rows: _Rows, node: FieldNode) -> list[tuple[str, str]]:
        return [
            (response_key(field), self.column(rows, USER, field.name.value, "users"))
            for field in self.fields(node.selection_set, USER.type_name)
        ]

    def column(self, rows: _Rows, values: Values[Any], name: str, arguments: str) -> str:
        """A row's JSON value of a declared field (or __typename) whose column is zipped in `rows`."""
        if name == "__typename":
            return repr(values.type_name)
        declared = values.by_name.get(name)
        if declared is None or declared.column is None:
            raise NotCompilable(f"{values.type_name}.{name} has no column")
        variable = rows.add(rows.code.call(declared.column, arguments))
        return self.serialized(rows.code, values, name, variable)

    def _edges(self, code: Builder, node: FieldNode) -> tuple[str, set[str], Wants]:
        """The expression of the edges over `page` and `users`, the edge fields selected, and
        what their nodes need."""
        items: list[tuple[str, str]] = []
        names: set[str] = set()
        node_wants = Wants()
        for field in self.fields(node.selection_set, EDGE.type_name):
            name, key = field.name.value, response_key(field)
            if name == "node":
                user, node_wants, _ = self.user_items(code, field, "edge[1]", with_lists=False)
                items.append((key, display(user)))
            elif name == "__typename" or name in EDGE.by_name:
                names.add(name)
                items.append((key, self.value(code, EDGE, name, "edge")))
            else:
                raise NotCompilable(f"FollowEdge.{name}")
        # An edge is (entry, facts): EdgeSource.
        return f"[{display(items)} for edge in zip(page.entries, users, strict=True)]", names, node_wants


# The mutations plans cover, by root field: the resolver function both executors call.
MUTATIONS: dict[str, Action] = {
    "follow": mutations.follow_reading,
    "unfollow": mutations.unfollow_reading,
}


class _Rows:
    """The columns a list's comprehension zips, a variable each: one row per entry of the page."""

    def __init__(self, code: Builder) -> None:
        self.code = code
        self.columns: list[str] = []

    def add(self, column: str) -> str:
        """The variable that holds, in each row, the value of `column` (an expression of a list)."""
        self.columns.append(column)
        return f"c{len(self.columns) - 1}"

    def comprehension(self, row: str) -> str:
        """A list of `row` for each entry of the page."""
        if not self.columns:
            return f"[{row} for _ in page.members]"
        if len(self.columns) == 1:
            return f"[{row} for c0 in {self.columns[0]}]"
        names = ", ".join(f"c{i}" for i in range(len(self.columns)))
        return f"[{row} for {names} in zip({', '.join(self.columns)}, strict=True)]"


def _constant(value: Any) -> Callable[..., Any]:
    return lambda *_: value


def _compile_mutation(compiler: _Compiler, chosen: OperationDefinitionNode) -> MutationPlan:
    """The plan of a `follow` or `unfollow` alone, its input written out (`input: {userId: ...}`)."""
    roots = compiler.fields(chosen.selection_set, "Mutation")
    if len(roots) != 1 or roots[0].name.value not in MUTATIONS:
        raise NotCompilable("not one follow or unfollow")
    node = roots[0]
    [argument] = node.arguments or [None]
    value = None if argument is None else argument.value
    if argument is None or argument.name.value != "input" or not isinstance(value, ObjectValueNode):
        raise NotCompilable("an input that is not written out")
    if [f.name.value for f in value.fields] != ["userId"]:
        raise NotCompilable("an input of other fields")
    types = compiler.types
    relationship = _enum_names(types, PAYLOAD, "relationship")
    code = _enum_names(types, "UserError", "code")
    parts = Parts()
    items: list[tuple[str, Callable[[FollowOutcome, UserFacts | None, UserFacts], Any]]] = []
    for field in compiler.fields(node.selection_set, PAYLOAD):
        name, key = field.name.value, response_key(field)
        if name in ("user", "viewer"):
            plan = compiler.user(field, with_lists=False)
            parts = parts | plan.wants
            items.append((key, _other(plan) if name == "user" else _viewer(plan)))
        elif name == "errors":
            items.append((key, _errors(compiler, field, code)))
        elif field.arguments or field.selection_set is not None:
            raise NotCompilable(f"{PAYLOAD}.{name} with arguments")
        elif name == "__typename":
            items.append((key, _constant(PAYLOAD)))
        elif name == "changed":
            items.append((key, lambda outcome, *_: outcome.changed))
        elif name == "pending":
            items.append((key, lambda outcome, *_: outcome.pending))
        elif name == "relationship":
            items.append((key, lambda outcome, *_: _relationship(outcome, relationship)))
        else:
            raise NotCompilable(f"{PAYLOAD}.{name}")

    def build(outcome: FollowOutcome, other: UserFacts | None, viewer: UserFacts) -> dict[str, Any]:
        return {key: get(outcome, other, viewer) for key, get in items}

    return MutationPlan(
        chosen.name.value if chosen.name else None,
        Variables.of(types, tuple(chosen.variable_definitions or ())),
        response_key(node),
        MUTATIONS[node.name.value],
        Argument.of(value.fields[0].value),
        parts,
        build,
        node,
    )


def _relationship(outcome: FollowOutcome, serialize: Callable[[Any], Any]) -> Any:
    if outcome.relationship is None:
        return None
    return serialize(Relationship.of(outcome.relationship))


def _other(plan: UserPlan) -> Callable[[FollowOutcome, UserFacts | None, UserFacts], Any]:
    return lambda outcome, other, viewer: None if other is None else plan.build(other, {})


def _viewer(plan: UserPlan) -> Callable[[FollowOutcome, UserFacts | None, UserFacts], Any]:
    return lambda outcome, other, viewer: plan.build(viewer, {})


def _errors(
    compiler: _Compiler, node: FieldNode, code: Callable[[Any], Any]
) -> Callable[[FollowOutcome, UserFacts | None, UserFacts], Any]:
    """The payload's user errors: code, message, field and __typename."""
    getters: list[tuple[str, Callable[[Failure], Any]]] = []
    for field in compiler.fields(node.selection_set, "UserError"):
        name, key = field.name.value, response_key(field)
        if name == "__typename":
            getters.append((key, _constant("UserError")))
        elif name == "code":
            getters.append((key, lambda failure: code(UserErrorCode[failure.code])))
        elif name == "message":
            getters.append((key, lambda failure: failure.message))
        elif name == "field":
            getters.append((key, lambda failure: failure.field))
        else:
            raise NotCompilable(f"UserError.{name}")

    def build(outcome: FollowOutcome, *_: Any) -> list[dict[str, Any]]:
        return [{key: get(failure) for key, get in getters} for failure in outcome.failures]

    return build


def compile_document(
    types: GraphQLSchema, query: str, operation_name: str | None, limits: QueryLimits
) -> Plan | MutationPlan:
    """The plan of `operation_name` in `query` (a document that already ran without error)."""
    document = parse(query)
    chosen = operation(document, operation_name)
    if chosen is None:
        raise NotCompilable("no single operation of that name")
    if chosen.directives:
        raise NotCompilable("directives on the operation")
    compiler = _Compiler(types, fragments_of(document))
    if chosen.operation is OperationType.MUTATION:
        return _compile_mutation(compiler, chosen)
    if chosen.operation is not OperationType.QUERY:
        raise NotCompilable("not a query or a mutation")
    roots: list[RootField] = []
    connections = 0
    for node in compiler.fields(chosen.selection_set, "Query"):
        name, key = node.name.value, response_key(node)
        if name == "__typename":
            roots.append(RootField(key, None, None, node))
            continue
        arguments = arguments_of(node)
        user_id: Argument | None
        if name == "viewer" and not arguments:
            user_id = None
        elif name == "user" and arguments.keys() == {"userId"}:
            user_id = arguments["userId"]
        else:
            raise NotCompilable(f"Query.{name}")
        plan = compiler.user(node, with_lists=True)
        connections += len(plan.lists)
        roots.append(RootField(key, user_id, plan, node))
    # Every connection's cost is its page size (its nodes hold no lists), and a page size above the
    # largest allowed stops the plan; beyond that worst case, check each request's variables.
    worst = connections * limits.max_page_size
    return Plan(
        chosen.name.value if chosen.name else None,
        Variables.of(types, tuple(chosen.variable_definitions or ())),
        tuple(roots),
        worst > limits.max_cost,
        document,
        batched=len(roots) > 1 or connections > 1,
    )
