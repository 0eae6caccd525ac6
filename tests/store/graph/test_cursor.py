from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from followgraph.store.graph.cursor import Cursor
from followgraph.store.graph.errors import InvalidCursorError

member = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)


@given(at=st.integers(min_value=0, max_value=2**53), member=member, list_id=st.text(max_size=40))
def test_round_trip(at: int, member: str, list_id: str) -> None:
    token = Cursor(at, member).encode(list_id)
    assert token.isascii() and "=" not in token
    assert Cursor.decode(token, list_id) == Cursor(at, member)


@given(token=st.text(max_size=120))
def test_arbitrary_text_is_refused_cleanly(token: str) -> None:
    with pytest.raises(InvalidCursorError):
        Cursor.decode(token, "fans:someone")
