"""Reading GraphQL documents: operations, fragments, selections and argument values.

The query limits, the selection-driven loading of users and the compiled plans all read the
same documents; they read them through this module. It is also the only module that reaches into
Strawberry's private attributes (for the graphql-core objects Strawberry wraps), so a Strawberry
upgrade that moves them is mended here alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLSchema,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionNode,
    SelectionSetNode,
    ValueNode,
    VariableNode,
    value_from_ast_untyped,
)
from graphql.validation import ASTValidationRule
from strawberry import Schema
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule
from strawberry.types import ExecutionContext
from strawberry.types.field import StrawberryField

Fragments = Mapping[str, FragmentDefinitionNode]
# Called for every inline fragment and fragment definition a selection expands (to refuse some).
FragmentCheck = Callable[[InlineFragmentNode | FragmentDefinitionNode], None]


class _Sum(Protocol):
    def __add__(self, other: Self, /) -> Self: ...


Value = TypeVar("Value", bound=_Sum)


class UnknownFragmentError(Exception):
    """A spread names a fragment the document does not define (validation refuses it)."""


# -- Strawberry's wrapped graphql-core objects --------------------------------------------------


_NAMES = StrawberryConfig().name_converter

# The validation rules Strawberry adds to graphql-core's (for its Maybe and @oneOf inputs).
STRAWBERRY_RULES: tuple[type[ASTValidationRule], ...] = (MaybeNullValidationRule, OneOfInputValidationRule)


def core_schema(schema: Schema) -> GraphQLSchema:
    """The graphql-core schema Strawberry built."""
    return schema._schema


def provided_operation_name(context: ExecutionContext) -> str | None:
    """The operation name the client sent (ExecutionContext.operation_name falls back to the first
    operation's name)."""
    return context._provided_operation_name


def graphql_name(field: StrawberryField) -> str:
    """A Strawberry field's name in the schema (the schema's default naming: camelCase)."""
    return _NAMES.get_graphql_name(field)


def field_nodes(info: Any) -> tuple[list[FieldNode], Fragments]:
    """The field nodes of the field being resolved and the document's fragments."""
    raw = info._raw_info
    return raw.field_nodes, raw.fragments


# -- documents -----------------------------------------------------------------------------------


def fragments_of(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def operations_of(document: DocumentNode) -> list[OperationDefinitionNode]:
    return [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]


def operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    """The operation that runs: the named one, or the only one; None when there is no such one."""
    operations = operations_of(document)
    if name is None:
        return operations[0] if len(operations) == 1 else None
    found = [o for o in operations if o.name is not None and o.name.value == name]
    return found[0] if len(found) == 1 else None


def response_key(node: FieldNode) -> str:
    return node.alias.value if node.alias is not None else node.name.value


@dataclass(frozen=True, slots=True)
class Argument:
    """An argument as written: a constant, or the name of a variable."""

    variable: str | None
    value: Any

    @classmethod
    def of(cls, node: ValueNode) -> Argument:
        if isinstance(node, VariableNode):
            return cls(node.name.value, None)
        return cls(None, value_from_ast_untyped(node))

    def get(self, variables: Mapping[str, Any]) -> Any:
        return self.value if self.variable is None else variables.get(self.variable)


def arguments_of(node: FieldNode) -> dict[str, Argument]:
    return {argument.name.value: Argument.of(argument.value) for argument in node.arguments or ()}


def fields(
    selection_set: SelectionSetNode | None,
    fragments: Fragments,
    check: FragmentCheck | None = None,
    expanded: set[str] | None = None,
) -> Iterator[FieldNode]:
    """The fields of a selection set, fragments expanded in document order. A named fragment is
    expanded once per call, or once for all the calls sharing `expanded` (its fields are the same
    wherever it is spread), which also stops cycles. `check` sees every fragment it expands."""
    if expanded is None:
        expanded = set()

    def walk(selections: SelectionSetNode | None) -> Iterator[FieldNode]:
        if selections is None:
            return
        for node in selections.selections:
            if isinstance(node, FieldNode):
                yield node
            elif isinstance(node, InlineFragmentNode):
                if check is not None:
                    check(node)
                yield from walk(node.selection_set)
            elif isinstance(node, FragmentSpreadNode):
                name = node.name.value
                if name in expanded:
                    continue
                expanded.add(name)
                fragment = fragments.get(name)
                if fragment is None:
                    raise UnknownFragmentError(name)
                if check is not None:
                    check(fragment)
                yield from walk(fragment.selection_set)

    return walk(selection_set)


def names_at(nodes: list[FieldNode], fragments: Fragments, path: tuple[str, ...]) -> set[str]:
    """Names of the fields selected at `path` (field names) below `nodes`."""
    level = nodes
    for step in path:
        level = [f for f in _below(level, fragments) if f.name.value == step]
    return {f.name.value for f in _below(level, fragments)}


def _below(nodes: list[FieldNode], fragments: Fragments) -> Iterator[FieldNode]:
    """The fields selected below any of `nodes`; each fragment is read once for all of them."""
    expanded: set[str] = set()
    for node in nodes:
        try:
            yield from fields(node.selection_set, fragments, expanded=expanded)
        except UnknownFragmentError:
            continue


class SelectionFold(Generic[Value]):
    """Folds selection sets into a sum of Values, fragments expanded: a subclass says what a field
    is worth (`field`, which folds its own selection set with `selections`) and may look at every
    selection and fragment definition it meets (`visit`). Each named fragment is folded once and its
    value reused wherever it is spread, so a document that fans fragments out exponentially is
    read in linear time; an unknown or cyclic spread is worth `empty` (validation refuses it)."""

    def __init__(self, schema: GraphQLSchema, document: DocumentNode, empty: Value) -> None:
        self.schema = schema
        self.fragments = fragments_of(document)
        self.empty = empty
        self._folded: dict[str, Value] = {}
        self._in_progress: set[str] = set()

    def field(self, node: FieldNode, parent: Any) -> Value:
        """What `node`, a field of the type `parent` (None when unknown), is worth."""
        raise NotImplementedError

    def visit(self, node: SelectionNode | FragmentDefinitionNode) -> None:
        """Sees every selection folded and every fragment definition, once per fold of it."""

    def selections(self, selections: SelectionSetNode | None, parent: Any) -> Value:
        """The sum over a selection set of fields of the type `parent`."""
        total = self.empty
        if selections is None:
            return total
        for node in selections.selections:
            self.visit(node)
            if isinstance(node, FieldNode):
                total += self.field(node, parent)
            elif isinstance(node, InlineFragmentNode):
                inner = (
                    self.schema.get_type(node.type_condition.name.value) if node.type_condition else parent
                )
                total += self.selections(node.selection_set, inner)
            elif isinstance(node, FragmentSpreadNode):
                total += self._fragment(node.name.value)
        return total

    def _fragment(self, name: str) -> Value:
        if name in self._folded:
            return self._folded[name]
        fragment = self.fragments.get(name)
        if fragment is None or name in self._in_progress:
            return self.empty
        self._in_progress.add(name)
        self.visit(fragment)
        inner = self.schema.get_type(fragment.type_condition.name.value)
        folded = self._folded[name] = self.selections(fragment.selection_set, inner)
        self._in_progress.discard(name)
        return folded
