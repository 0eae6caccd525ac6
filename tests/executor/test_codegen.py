"""Builders written out as source: only GraphQL names become keys, values come from the refs."""

from __future__ import annotations

import pytest

from followgraph.executor.codegen import Builder, display


def test_a_builder_calls_its_references() -> None:
    code = Builder()
    expression = display([("doubled", code.call(lambda x: x * 2, "n")), ("name", repr("N"))])
    build = code.function(["n"], expression)
    assert build(21) == {"doubled": 42, "name": "N"}


def test_a_builder_looks_tables_up_without_a_call() -> None:
    class Learning(dict[str, str]):
        def __missing__(self, key: str) -> str:
            value = self[key] = key.upper()
            return value

    code = Builder()
    table = Learning()
    expression = display([("name", code.lookup(table, "n"))])
    assert "(" not in expression
    build = code.function(["n"], expression)
    assert [build("mutual"), build("mutual"), build("none")] == [
        {"name": "MUTUAL"},
        {"name": "MUTUAL"},
        {"name": "NONE"},
    ]
    assert table == {"mutual": "MUTUAL", "none": "NONE"}


@pytest.mark.parametrize("key", ["", "a b", "x':1,'y", "1a", "a-b"])
def test_only_graphql_names_become_keys(key: str) -> None:
    with pytest.raises(ValueError, match="not a GraphQL name"):
        display([(key, "1")])
