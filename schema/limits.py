"""Query limits, checked before execution: depth, aliases, directives, page sizes and cost.

The cost is GitHub's node limit: every connection asks for up to `first`/`last` nodes (20 when
omitted) for each node of the connection it is nested in, and the products are summed. A query
for 20 fans, each with 5 of their fans, costs 20 + 20 * 5 = 120.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    BooleanValueNode,
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    ListValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
)
from strawberry.extensions import SchemaExtension

CONNECTION_TYPE = "FollowConnection"
DEFAULT_PAGE = 20


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """Defaults let every sensible frontend query through; each is configurable."""

    max_depth: int = 12
    max_aliases: int = 30
    max_directives: int = 5
    max_page_size: int = 100
    max_cost: int = 10_000
    max_tokens: int = 5_000


class LimitError(GraphQLError):
    def __init__(self, message: str, code: str, **extensions: object) -> None:
        super().__init__(message, extensions={"code": code, **extensions})


@dataclass
class _Measure:
    depth: int = 0
    aliases: int = 0
    cost: int = 0


class _Walker:
    def __init__(
        self, schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any], limits: QueryLimits
    ) -> None:
        self.schema = schema
        self.variables = variables
        self.limits = limits
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        self.measure = _Measure()

    def walk(
        self,
        selections: SelectionSetNode | None,
        parent: Any,
        depth: int,
        multiplier: int,
        seen: frozenset[str],
    ) -> None:
        if selections is None:
            return
        for node in selections.selections:
            self._directives(node)
            if isinstance(node, FieldNode):
                self._field(node, parent, depth, multiplier, seen)
            elif isinstance(node, InlineFragmentNode):
                inner = (
                    self.schema.get_type(node.type_condition.name.value) if node.type_condition else parent
                )
                self.walk(node.selection_set, inner, depth, multiplier, seen)
            elif isinstance(node, FragmentSpreadNode):
                name = node.name.value
                fragment = self.fragments.get(name)
                if fragment is None or name in seen:
                    continue  # unknown or cyclic: validation reports it
                self._directives(fragment)
                inner = self.schema.get_type(fragment.type_condition.name.value)
                self.walk(fragment.selection_set, inner, depth, multiplier, seen | {name})

    def _directives(self, node: Any) -> None:
        count = len(node.directives or ())
        if count > self.limits.max_directives:
            raise LimitError(
                f"A selection has {count} directives; at most {self.limits.max_directives} are allowed.",
                "TOO_MANY_DIRECTIVES",
            )

    def _field(self, node: FieldNode, parent: Any, depth: int, multiplier: int, seen: frozenset[str]) -> None:
        name = node.name.value
        if node.alias is not None:
            self.measure.aliases += 1
            if self.measure.aliases > self.limits.max_aliases:
                raise LimitError(
                    f"The query uses more than {self.limits.max_aliases} aliases.", "TOO_MANY_ALIASES"
                )
        if name.startswith("__"):
            return  # introspection: served from memory, bounded by the token limit
        depth += 1
        if depth > self.limits.max_depth:
            raise LimitError(
                f"The query is nested deeper than {self.limits.max_depth} levels.", "QUERY_TOO_DEEP"
            )
        self.measure.depth = max(self.measure.depth, depth)
        field = parent.fields.get(name) if isinstance(parent, GraphQLObjectType) else None
        if field is None:
            self.walk(node.selection_set, None, depth, multiplier, seen)
            return
        inner = field.type
        while isinstance(inner, GraphQLNonNull | GraphQLList):
            inner = inner.of_type
        if getattr(inner, "name", None) == CONNECTION_TYPE:
            multiplier *= self._page_size(node)
            self.measure.cost += multiplier
            if self.measure.cost > self.limits.max_cost:
                raise LimitError(
                    f"The query could return more than {self.limits.max_cost} nodes (first/last of each "
                    "connection times those of the connections around it): ask for smaller pages.",
                    "QUERY_TOO_COMPLEX",
                )
        elif isinstance(field.type, GraphQLNonNull | GraphQLList) and self._list_length(node) is not None:
            multiplier *= self._list_length(node) or 1
        self.walk(node.selection_set, inner, depth, multiplier, seen)

    def _value(self, node: ValueNode) -> Any:
        if isinstance(node, VariableNode):
            return self.variables.get(node.name.value)
        if isinstance(node, IntValueNode):
            return int(node.value)
        if isinstance(node, ListValueNode):
            return list(node.values)
        if isinstance(node, BooleanValueNode):
            return node.value
        return None

    def _page_size(self, node: FieldNode) -> int:
        size = DEFAULT_PAGE
        for argument in node.arguments or ():
            if argument.name.value in ("first", "last"):
                value = self._value(argument.value)
                if isinstance(value, int) and not isinstance(value, bool):
                    if not 0 <= value <= self.limits.max_page_size:
                        name = argument.name.value
                        raise LimitError(
                            f"`{name}` must be between 0 and {self.limits.max_page_size}, got {value}.",
                            "BAD_USER_INPUT",
                            argument=name,
                        )
                    size = value
        return size

    def _list_length(self, node: FieldNode) -> int | None:
        """How many items a list-returning field with a list argument (users, nodes) yields."""
        for argument in node.arguments or ():
            value = self._value(argument.value)
            if isinstance(value, list):
                return len(value)
        return None


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is None:
        return operations[0] if len(operations) == 1 else None
    return next((o for o in operations if o.name is not None and o.name.value == name), None)


def measure(
    schema: GraphQLSchema,
    document: DocumentNode,
    limits: QueryLimits,
    *,
    operation_name: str | None = None,
    variables: Mapping[str, Any] | None = None,
) -> tuple[int, int, int]:
    """(depth, aliases, cost) of the operation to run; LimitError past a limit."""
    operation = _operation(document, operation_name)
    if operation is None:
        return 0, 0, 0
    root = schema.get_root_type(operation.operation)
    walker = _Walker(schema, document, variables or {}, limits)
    walker.walk(operation.selection_set, root, 0, 1, frozenset())
    return walker.measure.depth, walker.measure.aliases, walker.measure.cost


class EnforceQueryLimits(SchemaExtension):
    """Refuses, before validation and execution, an operation past any of the QueryLimits."""

    def __init__(self, limits: QueryLimits) -> None:
        self.limits = limits

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is not None and not context.pre_execution_errors:
            try:
                measure(
                    context.schema._schema,
                    context.graphql_document,
                    self.limits,
                    operation_name=context._provided_operation_name,
                    variables=context.variables,
                )
            except LimitError as error:
                context.pre_execution_errors = [error]
        yield
