"""User ids are checked before any key is built, one at a time or a page's worth at once."""

from __future__ import annotations

from typing import Any

import pytest

from followgraph.store.graph.errors import InvalidInputError
from followgraph.store.graph.ids import validate_user_ids


def test_valid_ids_come_back_unchanged() -> None:
    ids = ["a", "B-9", "_" * 64]
    assert validate_user_ids(ids) == ids
    assert validate_user_ids([]) == []


@pytest.mark.parametrize(
    "ids",
    [["a\nb"], ["ok", "a\nb"], ["a\n", "b"], ["ok", ""], ["x" * 65], ["ok", "bad id"], ["ok", 3], [None]],
)
def test_a_bad_id_among_many_is_named(ids: list[Any]) -> None:
    with pytest.raises(InvalidInputError, match="Invalid user id"):
        validate_user_ids(ids)
