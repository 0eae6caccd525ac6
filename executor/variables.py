"""Coercing a compiled plan's variables: graphql-core's rules, checked quickly for the usual case.

graphql-core's `get_variable_values` costs some 6 µs a request, a tenth of a compiled page's own
time. Most operations declare only built-in scalars (`$userId: ID!`, `$first: Int`) and get values
that are already what coercion would return; those are checked here with a type test each, and
anything else (an int for an ID, a default, an input object, a wrong value) goes through
graphql-core, which also says what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from graphql import (
    GraphQLSchema,
    NamedTypeNode,
    NonNullTypeNode,
    VariableDefinitionNode,
    specified_scalar_types,
)
from graphql.execution.values import get_variable_values

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_MISSING: Final = object()

# Values coercion returns unchanged, by built-in scalar.
_UNCHANGED: dict[str, Callable[[Any], bool]] = {
    "ID": lambda value: type(value) is str,
    "String": lambda value: type(value) is str,
    "Int": lambda value: type(value) is int and _INT_MIN <= value <= _INT_MAX,
    "Boolean": lambda value: type(value) is bool,
}


class VariablesError(Exception):
    """The request's variables do not fit the operation's definitions."""


Simple = tuple[tuple[str, Callable[[Any], bool], bool], ...]


@dataclass(frozen=True, slots=True)
class Variables:
    """An operation's variable definitions, on the schema that coerces them."""

    schema: GraphQLSchema
    definitions: tuple[VariableDefinitionNode, ...]
    # (name, whether coercion leaves a value unchanged, non-null) of every variable, when all are
    # built-in scalars without a default; None otherwise.
    simple: Simple | None

    @classmethod
    def of(cls, schema: GraphQLSchema, definitions: tuple[VariableDefinitionNode, ...]) -> Variables:
        simple: list[tuple[str, Callable[[Any], bool], bool]] = []
        for definition in definitions:
            node, non_null = definition.type, isinstance(definition.type, NonNullTypeNode)
            if isinstance(node, NonNullTypeNode):
                node = node.type
            if not isinstance(node, NamedTypeNode) or definition.default_value is not None:
                return cls(schema, definitions, None)
            name = node.name.value
            unchanged = _UNCHANGED.get(name)
            # Only the specification's own scalars: a schema may replace them.
            if unchanged is None or schema.type_map.get(name) is not specified_scalar_types[name]:
                return cls(schema, definitions, None)
            simple.append((definition.variable.name.value, unchanged, non_null))
        return cls(schema, definitions, tuple(simple))

    def coerce(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The variables as the operation declares them; VariablesError when they do not fit."""
        quick = self._quick(given or {})
        if quick is not None:
            return quick
        result = get_variable_values(self.schema, self.definitions, dict(given or {}))
        if isinstance(result, list):
            raise VariablesError
        return result.coerced

    def _quick(self, given: Mapping[str, Any]) -> dict[str, Any] | None:
        """The variables when each is missing (nullable), null (nullable) or already what coercion
        returns; None when graphql-core must decide."""
        if self.simple is None:
            return None
        coerced: dict[str, Any] = {}
        for name, unchanged, non_null in self.simple:
            value = given.get(name, _MISSING)
            if value is _MISSING or value is None:
                if non_null:
                    return None
                if value is None:
                    coerced[name] = None
            elif unchanged(value):
                coerced[name] = value
            else:
                return None
        return coerced
