"""Plans' variable coercion gives what graphql-core gives, and refuses what it refuses."""

from __future__ import annotations

from typing import Any

from graphql import OperationDefinitionNode, parse
from graphql.execution.values import get_variable_values
from hypothesis import given
from hypothesis import strategies as st

from followgraph.executor.variables import Variables, VariablesError
from followgraph.schema import build_schema
from followgraph.schema.document import core_schema

TYPES = core_schema(build_schema())
DECLARED = [
    "ID!",
    "ID",
    "Int",
    "Int!",
    "String",
    "String!",
    "Boolean",
    "Boolean!",
    "Float",
    "Int = 5",
    "Relationship",
]
VALUES = st.one_of(
    st.none(),
    st.text(max_size=5),
    st.integers(min_value=-(2**33), max_value=2**33),
    st.floats(allow_nan=False),
    st.booleans(),
    st.sampled_from(["MUTUAL", "NONE", "nope"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
MISSING = object()


def definitions(declared: list[str]) -> Any:
    names = ", ".join(f"$v{i}: {kind}" for i, kind in enumerate(declared))
    document = parse(f"query Q({names}) {{ __typename }}" if declared else "query Q { __typename }")
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    return tuple(operation.variable_definitions or ())


def expected(defined: Any, given: dict[str, Any]) -> dict[str, Any] | None:
    result = get_variable_values(TYPES, defined, given)
    return None if isinstance(result, list) else result.coerced


@given(
    st.lists(st.sampled_from(DECLARED), max_size=4),
    st.lists(st.one_of(st.just(MISSING), VALUES), min_size=4, max_size=4),
)
def test_coercion_agrees_with_graphql_core(declared: list[str], values: list[Any]) -> None:
    defined = definitions(declared)
    given = {f"v{i}": value for i, value in enumerate(values) if value is not MISSING}
    want = expected(defined, given)
    try:
        got: dict[str, Any] | None = Variables.of(TYPES, defined).coerce(given)
    except VariablesError:
        got = None
    assert got == want
    if got is not None:
        assert {name: type(value) for name, value in got.items()} == {
            name: type(value) for name, value in (want or {}).items()
        }


def test_the_usual_variables_take_the_quick_check() -> None:
    assert Variables.of(TYPES, definitions(["ID!", "Int", "String"])).simple is not None
    # A default, an enum or a Float goes through graphql-core.
    for declared in ("Int = 5", "Relationship", "Float", "[ID!]"):
        assert Variables.of(TYPES, definitions(["ID!", declared])).simple is None


def test_an_int_for_an_id_is_coerced_to_a_string() -> None:
    variables = Variables.of(TYPES, definitions(["ID!"]))
    assert variables.coerce({"v0": 42}) == {"v0": "42"}
