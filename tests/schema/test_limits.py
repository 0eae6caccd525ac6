"""The query measure behind the limits: depth, aliases and GitHub-style node cost."""

from __future__ import annotations

from typing import Any

import pytest
from graphql import parse

from followgraph.resolvers.errors import ApiError
from followgraph.schema import schema
from followgraph.schema.document import core_schema
from followgraph.schema.limits import QueryLimits, measure

GRAPHQL = core_schema(schema)


def measured(document: str, variables: dict[str, Any] | None = None, **limits: int) -> tuple[int, int, int]:
    return measure(GRAPHQL, parse(document), QueryLimits(**limits), variables=variables)


def test_a_page_with_nested_pages_costs_the_sum_of_products() -> None:
    depth, aliases, cost = measured(
        '{ user(userId: "1") { fans(first: 20) { nodes { name fans(first: 5) { nodes { name } } } } } }'
    )
    assert cost == 20 + 20 * 5
    assert depth == 6
    assert aliases == 0


def test_omitted_page_sizes_count_as_twenty_and_last_counts_like_first() -> None:
    assert (
        measured('{ user(userId: "1") { fans { totalCount } following(last: 3) { totalCount } } }')[2] == 23
    )


def test_variables_and_lists_multiply() -> None:
    document = "query($n: Int, $ids: [ID!]!) { users(userIds: $ids) { fans(first: $n) { totalCount } } }"
    assert measured(document, {"n": 7, "ids": ["a", "b", "c"]})[2] == 21


def test_suggestions_and_their_followed_by_count_as_pages_with_their_own_defaults() -> None:
    document = "{ viewer { suggestions { user { userId } followedBy { fans(first: 2) { totalCount } } } } }"
    assert measured(document)[2] == 10 + 10 * (3 + 3 * 2)
    sized = (
        "{ viewer { suggestions(first: 50) { followedBy(first: 50) { fans(first: 2) { totalCount } } } } }"
    )
    assert measured(sized)[2] == 50 + 50 * (50 + 50 * 2)


def test_a_deep_walk_through_suggestions_is_refused_by_its_cost() -> None:
    document = """{ viewer { suggestions(first: 50) { followedBy(first: 50) {
        fans(first: 100) { nodes { fans(first: 99) { nodes { userId } } } } } } } }"""
    with pytest.raises(ApiError) as refused:
        measured(document)
    assert refused.value.extensions == {"code": "QUERY_TOO_COMPLEX"}


@pytest.mark.parametrize(
    "document",
    [
        "{ viewer { suggestions(first: 51) { followedBy { userId } } } }",
        "{ viewer { suggestions { followedBy(first: 51) { userId } } } }",
        "{ viewer { suggestions { followedBy(first: -1) { userId } } } }",
    ],
)
def test_suggestion_sizes_out_of_range_are_refused_before_anything_runs(document: str) -> None:
    with pytest.raises(ApiError) as refused:
        measured(document)
    assert refused.value.extensions is not None
    assert refused.value.extensions["code"] == "BAD_USER_INPUT"
    assert "between 0 and 50" in str(refused.value)


def test_fragments_count_where_they_are_spread() -> None:
    document = """
      query { a: user(userId: "1") { ...F } b: user(userId: "2") { ... on User { ...F } } }
      fragment F on User { mutuals(first: 4) { nodes { userId } } }
    """
    depth, aliases, cost = measured(document)
    assert (depth, aliases, cost) == (4, 2, 8)


def test_introspection_is_not_counted_as_depth() -> None:
    document = "{ __schema { types { fields { type { ofType { ofType { ofType { name } } } } } } } }"
    assert measured(document, max_depth=2) == (0, 0, 0)


@pytest.mark.parametrize(
    ("document", "limits", "code"),
    [
        (
            '{ user(userId: "1") { fans { nodes { fans { nodes { name } } } } } }',
            {"max_depth": 5},
            "QUERY_TOO_DEEP",
        ),
        ("{ a: viewer { userId } b: viewer { userId } }", {"max_aliases": 1}, "TOO_MANY_ALIASES"),
        (
            "{ viewer @include(if: true) @skip(if: false) { userId } }",
            {"max_directives": 1},
            "TOO_MANY_DIRECTIVES",
        ),
        (
            '{ user(userId: "1") { fans(first: 100) { nodes { fans(first: 100) { totalCount } } } } }',
            {"max_cost": 10_099},
            "QUERY_TOO_COMPLEX",
        ),
        ('{ user(userId: "1") { fans(first: 101) { totalCount } } }', {}, "BAD_USER_INPUT"),
        ('{ user(userId: "1") { fans(last: -1) { totalCount } } }', {}, "BAD_USER_INPUT"),
    ],
)
def test_each_limit_raises_its_own_code(document: str, limits: dict[str, int], code: str) -> None:
    # Limits raise LimitError; a page size out of range is the resolvers' own error (ApiError).
    with pytest.raises(ApiError) as caught:
        measured(document, None, **limits)
    assert caught.value.extensions is not None
    assert caught.value.extensions["code"] == code


def test_the_cost_limit_is_inclusive() -> None:
    document = '{ user(userId: "1") { fans(first: 100) { nodes { fans(first: 100) { totalCount } } } } }'
    assert measured(document, max_cost=10_100)[2] == 10_100


def test_cyclic_fragments_terminate() -> None:
    document = """
      query { viewer { ...A } }
      fragment A on User { fans { nodes { ...B } } }
      fragment B on User { fans { nodes { ...A } } }
    """
    assert measured(document)[2] == 20 + 400
