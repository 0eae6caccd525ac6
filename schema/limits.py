"""Query limits, checked before execution: depth, aliases, directives, page sizes and cost.

The cost is GitHub's node limit: every connection asks for up to `first`/`last` nodes (20 when
omitted) for each node of the connection it is nested in, and the products are summed. A query
for 20 fans, each with 5 of their fans, costs 20 + 20 * 5 = 120. The lists sized by a `first` of
their own (a user's suggestions, a suggestion's followedBy) count as connections do, with their
own default and most; `users` and `nodes` as many as the ids they are given.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    SelectionNode,
    ValueNode,
)
from graphql.execution.values import get_variable_values
from strawberry.extensions import SchemaExtension

from followgraph.resolvers import search, social
from followgraph.resolvers.errors import ApiError
from followgraph.resolvers.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, page_size_error
from followgraph.schema.document import (
    Argument,
    SelectionFold,
    core_schema,
    operation,
    provided_operation_name,
)
from followgraph.store.graph.search import MAX_RESULTS
from followgraph.store.graph.suggestions import MAX_SUGGESTIONS

CONNECTION_TYPE = "FollowConnection"
# The plain lists sized by a `first` argument: (type, field) -> (default, most).
SIZED_LISTS = {
    ("User", "suggestions"): (social.DEFAULT_SUGGESTIONS, MAX_SUGGESTIONS),
    ("Suggestion", "followedBy"): (social.DEFAULT_FOLLOWED_BY, social.MAX_FOLLOWED_BY),
    ("Query", "searchUsers"): (search.DEFAULT_RESULTS, MAX_RESULTS),
}


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """Defaults let every sensible frontend query through; each is configurable."""

    max_depth: int = 12
    max_aliases: int = 30
    max_directives: int = 5
    max_page_size: int = MAX_PAGE_SIZE
    max_cost: int = 10_000
    max_tokens: int = 5_000
    # Validation stops after this many errors (graphql-core's default is 100).
    max_errors: int = 10


class LimitError(ApiError):
    """A query past one of the QueryLimits."""


@dataclass(frozen=True, slots=True)
class _Measure:
    """What a selection set asks for: nesting depth, aliases, and cost per node it is asked on."""

    depth: int = 0
    aliases: int = 0
    cost: int = 0

    def __add__(self, other: "_Measure") -> "_Measure":
        return _Measure(max(self.depth, other.depth), self.aliases + other.aliases, self.cost + other.cost)


class _Walker(SelectionFold[_Measure]):
    """Measures an operation in one pass over the document (each fragment measured once, its
    measure reused wherever it is spread: cost is linear in the number of nodes it is asked on)."""

    def __init__(
        self, schema: GraphQLSchema, document: DocumentNode, variables: Mapping[str, Any], limits: QueryLimits
    ) -> None:
        super().__init__(schema, document, _Measure())
        self.variables = variables
        self.limits = limits

    def visit(self, node: SelectionNode | FragmentDefinitionNode) -> None:
        self._directives(node)

    def _directives(self, node: Any) -> None:
        count = len(node.directives or ())
        if count > self.limits.max_directives:
            raise LimitError(
                f"A selection has {count} directives; at most {self.limits.max_directives} are allowed.",
                "TOO_MANY_DIRECTIVES",
            )

    def field(self, node: FieldNode, parent: Any) -> _Measure:
        aliases = 0 if node.alias is None else 1
        if node.name.value.startswith("__"):
            return _Measure(aliases=aliases)  # introspection: served from memory, bounded by tokens
        field = parent.fields.get(node.name.value) if isinstance(parent, GraphQLObjectType) else None
        inner = field.type if field is not None else None
        while isinstance(inner, GraphQLNonNull | GraphQLList):
            inner = inner.of_type
        nested = self.selections(node.selection_set, inner)
        cost = nested.cost
        sized = SIZED_LISTS.get((parent.name, node.name.value)) if field is not None else None
        if getattr(inner, "name", None) == CONNECTION_TYPE:
            size = self._page_size(node, DEFAULT_PAGE_SIZE, self.limits.max_page_size)
            cost = size + size * nested.cost
        elif sized is not None:
            size = self._page_size(node, *sized)
            cost = size + size * nested.cost
        elif field is not None and isinstance(field.type, GraphQLNonNull | GraphQLList):
            cost = (self._list_length(node) or 1) * nested.cost
        return _Measure(nested.depth + 1, nested.aliases + aliases, cost)

    def _page_size(self, node: FieldNode, default: int, most: int) -> int:
        size = default
        for argument in node.arguments or ():
            if argument.name.value in ("first", "last"):
                value = self._value(argument.value)
                if isinstance(value, int) and not isinstance(value, bool):
                    error = page_size_error(argument.name.value, value, most)
                    if error is not None:
                        raise error
                    size = value
        return size

    def _list_length(self, node: FieldNode) -> int | None:
        """How many items a list-returning field with a list argument (users, nodes) yields."""
        for argument in node.arguments or ():
            value = self._value(argument.value)
            if isinstance(value, list):
                return len(value)
        return None

    def _value(self, node: ValueNode) -> Any:
        return Argument.of(node).get(self.variables)


def measure(
    schema: GraphQLSchema,
    document: DocumentNode,
    limits: QueryLimits,
    *,
    operation_name: str | None = None,
    variables: Mapping[str, Any] | None = None,
) -> tuple[int, int, int]:
    """(depth, aliases, cost) of the operation to run; LimitError past a limit.

    `variables` are the client's raw values: they are coerced as execution will coerce them
    (defaults applied, 100.0 read as 100), so the measure is the one of what would run.
    """
    chosen = operation(document, operation_name)
    if chosen is None:
        return 0, 0, 0
    coerced = get_variable_values(schema, chosen.variable_definitions or (), dict(variables or {}))
    if isinstance(coerced, list):
        return 0, 0, 0  # bad variables: execution refuses them before anything runs
    root = schema.get_root_type(chosen.operation)
    total = _Walker(schema, document, coerced.coerced, limits).selections(chosen.selection_set, root)
    if total.depth > limits.max_depth:
        raise LimitError(f"The query is nested deeper than {limits.max_depth} levels.", "QUERY_TOO_DEEP")
    if total.aliases > limits.max_aliases:
        raise LimitError(f"The query uses more than {limits.max_aliases} aliases.", "TOO_MANY_ALIASES")
    if total.cost > limits.max_cost:
        raise LimitError(
            f"The query could return more than {limits.max_cost} nodes (the first/last of each "
            "connection or sized list times those of the ones around it): ask for smaller pages.",
            "QUERY_TOO_COMPLEX",
        )
    return total.depth, total.aliases, total.cost


class EnforceQueryLimits(SchemaExtension):
    """Refuses an operation past any of the QueryLimits before it is validated: a document built
    to make validation work hard (or report thousands of errors) is refused by its shape first."""

    def __init__(self, limits: QueryLimits) -> None:
        self.limits = limits

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if context.graphql_document is not None and not context.pre_execution_errors:
            try:
                measure(
                    core_schema(context.schema),
                    context.graphql_document,
                    self.limits,
                    operation_name=provided_operation_name(context),
                    variables=context.variables,
                )
            except ApiError as error:
                context.pre_execution_errors = [error]
        yield
