"""Database URLs as users write them, turned into SQLAlchemy URLs with the async drivers."""

from __future__ import annotations

from pathlib import Path

# The driver each database is reached with when the URL names none.
DRIVERS = {
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "mysql": "mysql+asyncmy",
    "mariadb": "mysql+asyncmy",
    "sqlite": "sqlite+aiosqlite",
}
# Explicit drivers that are async, and so usable as they are.
ASYNC_DRIVERS = {
    "postgresql+asyncpg",
    "mysql+asyncmy",
    "mysql+aiomysql",
    "mariadb+asyncmy",
    "sqlite+aiosqlite",
}


class UnsupportedDatabaseError(ValueError):
    """A URL of a database (or a driver) the SQL copy does not run on."""


def _unsupported(url: str, what: str) -> UnsupportedDatabaseError:
    supported = "postgresql://, postgres://, mysql://, mariadb:// or sqlite:///path"
    return UnsupportedDatabaseError(
        f"Unsupported database URL {hidden_url(url)!r}: {what}. Use {supported} "
        f"(or an async driver: {', '.join(sorted(ASYNC_DRIVERS))})."
    )


def hidden_url(url: str) -> str:
    """`url` (a database's or Redis') as it may be shown in messages and logs: without its password."""
    # SQLAlchemy is imported here, where a URL is parsed, not with the module: the settings and the
    # command line check URLs and show them hidden, and load it only when they show one.
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # several hosts, or a port that is not a number
        scheme, sep, rest = url.partition("://")
        userinfo, at, hosts = rest.rpartition("@")
        if not sep or not at:
            return url
        user, colon, _ = userinfo.partition(":")
        return f"{scheme}://{user}{':***' if colon else ''}@{hosts}"


def database_url(url: str) -> str:
    """`url` with its database's async driver (postgresql+asyncpg, mysql+asyncmy, sqlite+aiosqlite)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise _unsupported(url, "it has no scheme")
    scheme = scheme.lower()
    if "+" in scheme:
        if scheme not in ASYNC_DRIVERS:
            raise _unsupported(url, f"the driver {scheme!r} is not one of the async drivers")
        return url
    if scheme not in DRIVERS:
        raise _unsupported(url, f"the scheme {scheme!r} is not a database the copy runs on")
    return f"{DRIVERS[scheme]}://{rest}"


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL; None for another database, or SQLite in memory."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)
