from __future__ import annotations

import pytest

from followgraph.store.sql.urls import UnsupportedDatabaseError, database_url


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@db:5432/fg", "postgresql+asyncpg://u:p@db:5432/fg"),
        ("postgres://u@db/fg", "postgresql+asyncpg://u@db/fg"),
        ("mysql://root@127.0.0.1:3306/fg", "mysql+asyncmy://root@127.0.0.1:3306/fg"),
        ("mariadb://root@db/fg?charset=utf8mb4", "mysql+asyncmy://root@db/fg?charset=utf8mb4"),
        ("sqlite:///relative.db", "sqlite+aiosqlite:///relative.db"),
        ("sqlite:////var/lib/fg.db", "sqlite+aiosqlite:////var/lib/fg.db"),
        ("postgresql+asyncpg://u@db/fg", "postgresql+asyncpg://u@db/fg"),
        ("mysql+aiomysql://u@db/fg", "mysql+aiomysql://u@db/fg"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db"),
    ],
)
def test_urls_get_their_async_driver(given: str, expected: str) -> None:
    assert database_url(given) == expected


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("oracle://scott:tiger@db/orcl", "the scheme 'oracle' is not a database the copy runs on"),
        ("postgresql+psycopg2://u@db/fg", "the driver 'postgresql+psycopg2' is not one of the async drivers"),
        ("just-a-path.db", "it has no scheme"),
    ],
)
def test_unsupported_urls_say_why_and_what_to_use(given: str, says: str) -> None:
    with pytest.raises(UnsupportedDatabaseError) as raised:
        database_url(given)
    message = str(raised.value)
    assert says in message
    assert "postgresql://, postgres://, mysql://, mariadb:// or sqlite:///path" in message
    assert isinstance(raised.value, ValueError)


def test_the_error_hides_a_password() -> None:
    with pytest.raises(UnsupportedDatabaseError) as raised:
        database_url("oracle://scott:tiger@db/orcl")
    assert "tiger" not in str(raised.value)
