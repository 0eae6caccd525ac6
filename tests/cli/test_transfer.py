"""CSV / JSON Lines import and export: parsing with line numbers, imports on the real Redis, round trips."""

from __future__ import annotations

import io
import time
from typing import Any, cast

import pytest
import redis.asyncio as aioredis

from followgraph.cli.demo import DemoSpec, is_empty, load_demo
from followgraph.cli.edge_import import EDGE_BATCH, import_edges
from followgraph.cli.records import Format, HeaderError
from followgraph.cli.transfer import (
    BATCH,
    MAX_REPORTED_ERRORS,
    OnError,
    RowError,
    Summary,
    control_rows,
    edge_rows,
    export_controls,
    export_edges,
    export_users,
    import_controls,
    import_users,
    parse_flag,
    parse_time,
    user_rows,
)
from followgraph.server.redis_cluster import LocalCluster
from followgraph.store import Counts, FollowStore, ListKind, Profile, UserSettings
from followgraph.store.graph import control_scripts as cs
from followgraph.store.graph.bulk import (
    FIRST_READ,
    Control,
    ControlKind,
    ControlStatus,
    Edge,
    UserRow,
    control_many,
    load_control_scripts,
    scan_users,
)
from followgraph.store.graph.repair import verify
from followgraph.store.redis.lua import Client
from tests.conftest import Backend
from tests.store.snapshot import dump, graph_only

T2024 = 1_704_067_200_000  # 2024-01-01T00:00:00Z in epoch ms
NOW = 1_760_000_000_000
BAD_ID = "use 1 to 64 characters of A-Z, a-z, 0-9, _ and -."

Snapshot = dict[tuple[str, ListKind], list[tuple[str, int]]]


def lines(text: str) -> io.StringIO:
    return io.StringIO(text, newline="")


async def snapshot(store: FollowStore, user_ids: list[str]) -> Snapshot:
    """Every list of every user, (member, score) newest first, straight from FollowStore pages."""
    queries = [store.list_query(kind, u, first=1000) for u in user_ids for kind in ListKind]
    result: Snapshot = {}
    for query, page in zip(queries, await store.pages(queries), strict=True):
        assert not page.has_next
        result[(query.user_id, query.kind)] = [(e.user_id, e.at) for e in page.entries]
    return result


async def lists(store: FollowStore, user_id: str) -> tuple[list[tuple[str, int]], ...]:
    """(following, fans, mutual) of one user."""
    snap = await snapshot(store, [user_id])
    return tuple(snap[(user_id, kind)] for kind in ListKind if kind.public)


async def all_profiles(store: FollowStore) -> list[Profile]:
    found = [p async for batch in scan_users(store) for p in batch]
    return sorted(found, key=lambda p: p.user_id)


def now_ms() -> int:
    return int(time.time() * 1000)


# -- parse_time -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (0, 0),
        (1_700_000_000_123, 1_700_000_000_123),
        ("1700000000123", 1_700_000_000_123),
        (" 42 ", 42),
        ("2024-01-01T00:00:00Z", T2024),
        ("2024-01-01T00:00:00.250Z", T2024 + 250),
        ("2024-01-01T08:00:00+08:00", T2024),
        ("2023-12-31T19:00:00-05:00", T2024),
        (None, None),
        ("", None),
    ],
)
def test_parse_time_accepts(raw: Any, expected: int | None) -> None:
    assert parse_time(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "2024-01-01T00:00:00",  # naive: which zone?
        "2024-01-01",
        "yesterday",
        "17e11",
        "1.5",
        "-5",
        -5,
        True,
        1.5,
        [1],
    ],
)
def test_parse_time_rejects(raw: Any) -> None:
    with pytest.raises(
        ValueError, match=r"bad time .*: use epoch milliseconds or ISO-8601 with a zone, from 1970 on"
    ):
        parse_time(raw)


def test_parse_time_rejects_an_iso_time_before_1970() -> None:
    # Epoch ms must be non-negative (the integer path and FollowStore.follow both insist on it), but
    # a pre-1970 ISO time comes out negative and would reach Redis as a negative follow time.
    with pytest.raises(ValueError, match="bad time"):
        parse_time("1969-12-31T23:59:59Z")


# -- edge_rows ------------------------------------------------------------------------------------


def test_edge_rows_csv_with_header_blank_lines_and_short_rows() -> None:
    text = (
        "follower,followee,followed_at\n"  # 1
        "alice,bob,1700000000000\n"  # 2
        "\n"  # 3
        "bob,alice,2024-01-01T00:00:00Z\n"  # 4
        "bob,carol\n"  # 5: no time column -> now
        "carol,dave,\n"  # 6: empty time -> now
        "  \n"  # 7
        "carol\n"  # 8: short row
        "dave,erin,5,extra\n"  # 9: a value beyond the header's columns
    )
    assert list(edge_rows(lines(text), Format.CSV)) == [
        (2, Edge("alice", "bob", 1_700_000_000_000)),
        (4, Edge("bob", "alice", T2024)),
        (5, Edge("bob", "carol", None)),
        (6, Edge("carol", "dave", None)),
        (8, RowError(8, "no followee: the row ends before its followee column")),
        (9, RowError(9, "4 values for 3 columns (follower,followee,followed_at)")),
    ]


@pytest.mark.parametrize(
    ("header", "row", "edge"),
    [
        ("followee,follower,followed_at", "bob,alice,5", Edge("alice", "bob", 5)),
        (" followed_at , followee,follower", "5,bob,alice", Edge("alice", "bob", 5)),
        ("followee,follower", "bob,alice", Edge("alice", "bob", None)),
    ],
)
def test_edge_rows_csv_read_the_columns_by_the_header_s_names(header: str, row: str, edge: Edge) -> None:
    assert list(edge_rows(lines(f"\n{header}\n{row}\n"), Format.CSV)) == [(3, edge)]


def test_user_and_control_rows_csv_read_the_columns_by_the_header_s_names() -> None:
    users = "hideFans,name,userId,createdAt\ntrue,Ann,ann,5\n"
    assert list(user_rows(lines(users), Format.CSV)) == [(2, UserRow("ann", "Ann", None, 5, hide_fans=True))]
    controls = "at,target,actor,kind\n7,bob,ann,mute\n"
    assert list(control_rows(lines(controls), Format.CSV)) == [
        (2, Control(ControlKind.MUTE, "ann", "bob", 7))
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "a,b\n1,2\n",
            "its first line, 'a,b', names none of the columns of edges (follower and followee, and "
            "optionally followed_at): start the file with a header naming them, in any order, or pass "
            "--no-header if its rows hold follower,followee,followed_at in that order",
        ),
        (
            "follower,followee,at\n",
            "its header names an unknown column 'at'; the columns of edges are follower and followee, "
            "and optionally followed_at, in any order",
        ),
        (
            "followee,followee,x,y\n",
            "its header names unknown columns 'x' and 'y', names followee more than once and lacks "
            "follower; the columns of edges are follower and followee, and optionally followed_at, in "
            "any order",
        ),
    ],
)
def test_a_csv_header_that_does_not_fit_is_refused_at_once(text: str, message: str) -> None:
    with pytest.raises(HeaderError) as refused:
        edge_rows(lines(text), Format.CSV)  # before any row is asked for
    assert str(refused.value) == message


def test_without_a_header_a_first_line_that_is_one_is_refused() -> None:
    with pytest.raises(HeaderError, match="its first line, 'userId,name', is a header, but --no-header"):
        user_rows(lines("userId,name\nann,Ann\n"), Format.CSV, header=False)
    # A user whose id merely looks like a column name is a row.
    assert list(user_rows(lines("name,Ann\n"), Format.CSV, header=False)) == [(1, UserRow("name", "Ann"))]


def test_an_empty_csv_file_has_no_rows() -> None:
    assert list(edge_rows(lines(""), Format.CSV)) == []
    assert list(edge_rows(lines("\n\n"), Format.CSV, header=False)) == []
    assert list(edge_rows(lines("follower,followee\n"), Format.CSV)) == []


def test_edge_rows_csv_without_header_starts_at_line_one() -> None:
    text = "alice,bob,1\nbob,alice,2\n"
    assert list(edge_rows(lines(text), Format.CSV, header=False)) == [
        (1, Edge("alice", "bob", 1)),
        (2, Edge("bob", "alice", 2)),
    ]


def test_edge_rows_csv_with_crlf_and_quoted_fields() -> None:
    text = 'follower,followee,followed_at\r\n"alice","bob","7"\r\n\r\nbob,alice,8\r\n'
    assert list(edge_rows(lines(text), Format.CSV)) == [
        (2, Edge("alice", "bob", 7)),
        (4, Edge("bob", "alice", 8)),
    ]


def test_edge_rows_csv_errors_carry_their_line_numbers() -> None:
    text = (
        "follower,followee,followed_at\n"  # 1
        "alice,bob,1\n"  # 2
        "al ice,bob,1\n"  # 3: malformed follower
        "alice,b/ob,1\n"  # 4: malformed followee
        "\n"  # 5
        "carol,carol,1\n"  # 6: self-follow
        "alice,carol,soon\n"  # 7: bad time
        "alice,carol,2024-01-01T00:00:00\n"  # 8: naive time
        ",bob,1\n"  # 9: empty follower
        "alice,carol,3\n"  # 10
    )
    assert list(edge_rows(lines(text), Format.CSV)) == [
        (2, Edge("alice", "bob", 1)),
        (3, RowError(3, f"Invalid user id 'al ice': {BAD_ID}")),
        (4, RowError(4, f"Invalid user id 'b/ob': {BAD_ID}")),
        (6, RowError(6, "a user cannot follow themselves")),
        (7, RowError(7, "bad time 'soon': use epoch milliseconds or ISO-8601 with a zone, from 1970 on")),
        (
            8,
            RowError(
                8,
                "bad time '2024-01-01T00:00:00': use epoch milliseconds or ISO-8601 with a zone, "
                "from 1970 on",
            ),
        ),
        (9, RowError(9, f"Invalid user id '': {BAD_ID}")),
        (10, Edge("alice", "carol", 3)),
    ]


def test_edge_rows_jsonl() -> None:
    text = (
        '{"follower": "alice", "followee": "bob", "followed_at": 1700000000000}\n'  # 1
        "\n"  # 2
        '{"follower": "bob", "followee": "alice", "followed_at": "2024-01-01T00:00:00Z"}\n'  # 3
        '{"follower": "bob", "followee": "carol"}\n'  # 4: no time -> now
        '{"follower": "carol", "followee": "bob", "followed_at": null}\n'  # 5
        '{"follower": "alice", "followee": \n'  # 6: broken JSON
        '["alice", "bob"]\n'  # 7: not an object
        '"alice"\n'  # 8: not an object
        '{"follower": "alice", "followee": "alice"}\n'  # 9: self-follow
        '{"follower": "alice", "followee": "bob!"}\n'  # 10: malformed id
        '{"follower": "alice", "followee": "dave", "followed_at": "2024-01-01"}\n'  # 11: naive time
        '{"follower": "alice", "followee": "dave", "followed_at": 1.5}\n'  # 12: not whole ms
        '{"followee": "dave"}\n'  # 13: no follower
        '{"follower": 7, "followee": 8, "followed_at": "9"}\n'  # 14: numbers as ids
    )
    rows = list(edge_rows(lines(text), Format.JSONL))
    assert [number for number, _ in rows] == [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    assert rows[:4] == [
        (1, Edge("alice", "bob", 1_700_000_000_000)),
        (3, Edge("bob", "alice", T2024)),
        (4, Edge("bob", "carol", None)),
        (5, Edge("carol", "bob", None)),
    ]
    assert rows[4] == (6, RowError(6, "not JSON: Expecting value"))
    assert rows[5:] == [
        (7, RowError(7, "not a JSON object")),
        (8, RowError(8, "not a JSON object")),
        (9, RowError(9, "a user cannot follow themselves")),
        (10, RowError(10, f"Invalid user id 'bob!': {BAD_ID}")),
        (
            11,
            RowError(
                11, "bad time '2024-01-01': use epoch milliseconds or ISO-8601 with a zone, from 1970 on"
            ),
        ),
        (12, RowError(12, "bad time '1.5': use epoch milliseconds or ISO-8601 with a zone, from 1970 on")),
        (13, RowError(13, "no follower (an object needs follower and followee)")),
        (14, Edge("7", "8", 9)),
    ]


def test_edge_rows_jsonl_null_ids_are_rejected_not_read_as_the_user_none() -> None:
    # str(None) is "None", a valid user id: a null follower must not import as user "None".
    text = '{"follower": null, "followee": "bob"}\n{"follower": "alice", "followee": null}\n'
    rows = list(edge_rows(lines(text), Format.JSONL))
    assert [number for number, _ in rows] == [1, 2]
    assert all(isinstance(row, RowError) for _, row in rows), rows


# -- user_rows ------------------------------------------------------------------------------------


def test_user_rows_csv() -> None:
    text = (
        "userId,name,avatarUrl,createdAt\n"  # 1
        "u1,Alice,https://img.example/a.png,1700000000000\n"  # 2
        "\n"  # 3
        "u2,,,\n"  # 4
        'u3,"  Bob, Jr.  ",,2024-01-01T08:00:00+08:00\n'  # 5
        "u4,Carl,ftp://img.example/c.png\n"  # 6
        "u5,Dana,not a url\n"  # 7
        "bad!,Eve\n"  # 8
        "u6\n"  # 9: short row
        "u7,Fay,,2024-01-01T00:00:00\n"  # 10: naive time
        "u8,Gus,https://img.example/g.png?size=2\n"  # 11
    )
    avatar_error = "The avatar URL must be an absolute http:// or https:// URL."
    assert list(user_rows(lines(text), Format.CSV)) == [
        (2, UserRow("u1", "Alice", "https://img.example/a.png", 1_700_000_000_000)),
        (4, UserRow("u2")),
        (5, UserRow("u3", "Bob, Jr.", None, T2024)),
        (6, RowError(6, avatar_error)),
        (7, RowError(7, avatar_error)),
        (8, RowError(8, f"Invalid user id 'bad!': {BAD_ID}")),
        (9, UserRow("u6")),
        (
            10,
            RowError(
                10,
                "bad time '2024-01-01T00:00:00': use epoch milliseconds or ISO-8601 with a zone, "
                "from 1970 on",
            ),
        ),
        (11, UserRow("u8", "Gus", "https://img.example/g.png?size=2")),
    ]


def test_user_rows_csv_without_header() -> None:
    assert list(user_rows(lines("u1,Alice\nu2,Bob,,5\n"), Format.CSV, header=False)) == [
        (1, UserRow("u1", "Alice")),
        (2, UserRow("u2", "Bob", None, 5)),
    ]


def test_user_rows_jsonl() -> None:
    text = (
        '{"userId": "u1", "name": "Alice", "avatarUrl": "https://img.example/a.png", '
        '"createdAt": 1700000000000}\n'  # 1
        '{"userId": "u2", "name": null, "avatarUrl": null, "createdAt": null}\n'  # 2
        "\n"  # 3
        '{"userId": "u3"\n'  # 4: broken JSON
        '["u4"]\n'  # 5: not an object
        '{"userId": "u5", "avatarUrl": "javascript:alert(1)"}\n'  # 6
        '{"userId": "u6", "name": "   "}\n'  # 7: blank name
        '{"userId": "u7", "name": "' + "x" * 65 + '"}\n'  # 8: long name
        '{"userId": "u8", "name": "Zo\\u00eb \\u674e", "createdAt": "2024-01-01T00:00:00Z"}\n'  # 9
    )
    assert list(user_rows(lines(text), Format.JSONL)) == [
        (1, UserRow("u1", "Alice", "https://img.example/a.png", 1_700_000_000_000)),
        (2, UserRow("u2")),
        (4, RowError(4, "not JSON: Expecting ',' delimiter")),
        (5, RowError(5, "not a JSON object")),
        (6, RowError(6, "The avatar URL must be an absolute http:// or https:// URL.")),
        (7, RowError(7, "The name must not be blank.")),
        (8, RowError(8, "The name is longer than 64 characters.")),
        (9, UserRow("u8", "Zoë 李", None, T2024)),
    ]


def test_user_rows_jsonl_null_user_id_is_rejected_not_read_as_the_user_none() -> None:
    rows = list(user_rows(lines('{"userId": null, "name": "Nobody"}\n'), Format.JSONL))
    assert len(rows) == 1
    assert isinstance(rows[0][1], RowError), rows


# -- import_edges on the real Redis ---------------------------------------------------------------

EDGES_CSV = (
    "follower,followee,followed_at\n"  # 1
    "alice,bob,1700000000000\n"  # 2
    "bob,alice,2024-01-01T00:00:00Z\n"  # 3
    "alice,carol,1700000000500\n"  # 4
    "carol,carol,1700000000600\n"  # 5: self-follow
    "alice,bob,1700000009999\n"  # 6: again, with another time
    "dave,bad id,1\n"  # 7: malformed followee
    "erin,alice,\n"  # 8: now
)


async def test_import_edges_counts_graph_and_rerun(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    before = now_ms()
    summary = await import_edges(store, edge_rows(lines(EDGES_CSV), Format.CSV))
    after = now_ms()
    assert (summary.rows, summary.written, summary.unchanged, summary.rejected) == (7, 4, 1, 2)
    assert summary.errors == [
        RowError(5, "a user cannot follow themselves"),
        RowError(7, f"Invalid user id 'bad id': {BAD_ID}"),
    ]
    assert summary.stopped_at is None

    # Users named by valid rows are registered; dave (only on a rejected row) is not.
    assert await store.registered(["alice", "bob", "carol", "erin", "dave"]) == [True] * 4 + [False]
    following, fans, mutual = await lists(store, "alice")
    assert following == [("carol", 1_700_000_000_500), ("bob", 1_700_000_000_000)]  # first time kept
    assert [member for member, _ in fans] == ["erin", "bob"]
    assert fans[1] == ("bob", T2024)
    assert before - 1000 <= fans[0][1] <= after + 1000  # erin's follow: now
    assert mutual == [("bob", T2024)]  # mutual since the later of the two follows
    assert await lists(store, "bob") == (
        [("alice", T2024)],
        [("alice", 1_700_000_000_000)],
        [("alice", T2024)],
    )
    assert await lists(store, "carol") == ([], [("alice", 1_700_000_000_500)], [])
    assert await store.counts(["alice", "bob", "carol", "erin"]) == [
        Counts(2, 2, 1),
        Counts(1, 1, 1),
        Counts(0, 1, 0),
        Counts(1, 0, 0),
    ]
    registered = await all_profiles(store)
    assert [p.user_id for p in registered] == ["alice", "bob", "carol", "erin"]
    assert all(p.name is None and before - 1000 <= p.created_at <= after + 1000 for p in registered)

    snap = await snapshot(store, ["alice", "bob", "carol", "erin"])
    again = await import_edges(store, edge_rows(lines(EDGES_CSV), Format.CSV))
    assert (again.rows, again.written, again.unchanged, again.rejected) == (7, 0, 5, 2)
    assert [e.line for e in again.errors] == [5, 7]
    assert await snapshot(store, ["alice", "bob", "carol", "erin"]) == snap


async def test_import_edges_without_registering_missing_users(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    for user_id in ("alice", "bob"):
        await store.upsert_user(user_id)
    text = "alice,bob,10\nalice,xavier,11\nyves,alice,12\nbob,alice,13\n"
    summary = await import_edges(
        store, edge_rows(lines(text), Format.CSV, header=False), register_missing=False
    )
    assert (summary.rows, summary.written, summary.unchanged, summary.rejected) == (4, 2, 0, 2)
    assert summary.errors == [
        RowError(2, "user 'xavier' is not registered"),
        RowError(3, "user 'yves' is not registered"),
    ]
    assert await store.registered(["xavier", "yves"]) == [False, False]
    assert await lists(store, "alice") == ([("bob", 10)], [("bob", 13)], [("bob", 13)])
    keys = store.keys
    untouched = [keys.profile("xavier"), keys.fans("xavier"), keys.profile("yves"), keys.following("yves")]
    assert await real_redis.exists(*untouched) == 0
    assert await real_redis.dbsize() == 2 + 2 * 3 + 1  # two profiles, three lists each, the log


async def test_import_edges_registers_missing_users_by_default(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    await store.upsert_user("alice", name="Alice", created_at=5)
    summary = await import_edges(
        store, edge_rows(lines("alice,xavier,10\nyves,alice,12\n"), Format.CSV, header=False)
    )
    assert (summary.rows, summary.written, summary.rejected) == (2, 2, 0)
    assert await store.registered(["xavier", "yves"]) == [True, True]
    # An existing profile is left as it was.
    assert (await store.profiles(["alice"]))[0] == Profile("alice", "Alice", None, 5)
    assert await lists(store, "alice") == ([("xavier", 10)], [("yves", 12)], [])


async def test_an_edge_to_a_locked_account_without_a_time_is_counted_as_a_request(
    real_redis: aioredis.Redis,
) -> None:
    store = FollowStore(real_redis)
    await store.upsert_user("lea")
    await store.update_settings("lea", locked=True)
    text = "ann,lea,\nbob,lea,10\n"  # ann asks (as follow() would); bob's follow has its time
    summary = await import_edges(store, edge_rows(lines(text), Format.CSV, header=False))
    assert (summary.rows, summary.written, summary.requested, summary.unchanged) == (2, 1, 1, 0)
    assert await lists(store, "lea") == ([], [("bob", 10)], [])
    assert await real_redis.zscore(store.keys.requests_out("ann"), "lea") is not None

    again = await import_edges(store, edge_rows(lines(text), Format.CSV, header=False))
    assert (again.written, again.requested, again.unchanged) == (0, 0, 2)


async def test_on_error_stop_stops_at_the_first_bad_row(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    text = "a,b,1\nb,c,2\n\nc,d,yesterday\nd,a,4\nc,c,5\n"
    summary = await import_edges(
        store, edge_rows(lines(text), Format.CSV, header=False), on_error=OnError.STOP
    )
    assert (summary.rows, summary.written, summary.unchanged, summary.rejected) == (3, 2, 0, 1)
    assert summary.stopped_at == 4
    assert summary.errors == [
        RowError(4, "bad time 'yesterday': use epoch milliseconds or ISO-8601 with a zone, from 1970 on")
    ]
    assert await store.registered(["a", "b", "c", "d"]) == [True, True, True, False]
    assert await lists(store, "b") == ([("c", 2)], [("a", 1)], [])
    assert await lists(store, "a") == ([("b", 1)], [], [])


async def test_on_error_stop_after_more_than_a_batch(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    good = [f"u{i},hub,{i}\n" for i in range(BATCH + 500)]
    text = "".join([*good, "hub,hub,1\n", "late,hub,1\n"])
    summary = await import_edges(
        store, edge_rows(lines(text), Format.CSV, header=False), on_error=OnError.STOP
    )
    assert (summary.rows, summary.written, summary.rejected) == (BATCH + 501, BATCH + 500, 1)
    assert summary.stopped_at == BATCH + 501
    assert await store.counts(["hub", "late"]) == [Counts(0, BATCH + 500, 0), Counts(0, 0, 0)]
    assert await store.registered(["late"]) == [False]


async def test_on_error_stop_also_stops_at_an_unregistered_user(real_redis: aioredis.Redis) -> None:
    # With register_missing=False an unregistered user is a bad row like any other (reported with
    # its line number); OnError.STOP should stop there and say so, as the CLI's --on-error stop promises.
    store = FollowStore(real_redis)
    for user_id in ("alice", "bob"):
        await store.upsert_user(user_id)
    text = "alice,bob,1\nalice,xavier,2\nbob,alice,3\n"
    summary = await import_edges(
        store, edge_rows(lines(text), Format.CSV, header=False), on_error=OnError.STOP, register_missing=False
    )
    assert summary.errors == [RowError(2, "user 'xavier' is not registered")]
    assert summary.rejected == 1
    assert (await lists(store, "alice"))[0] == [("bob", 1)]  # the row before it was imported
    assert summary.stopped_at == 2


async def test_import_edges_reports_progress_per_batch(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    seen: list[int] = []
    text = "".join(f"u{i},hub,{i}\n" for i in range(2 * EDGE_BATCH + 500))
    summary = await import_edges(
        store, edge_rows(lines(text), Format.CSV, header=False), progress=seen.append
    )
    assert summary.written == 2 * EDGE_BATCH + 500
    assert seen == [EDGE_BATCH, 2 * EDGE_BATCH, 2 * EDGE_BATCH + 500]
    assert summary.seconds > 0
    assert summary.rate == pytest.approx(summary.rows / summary.seconds)


async def test_import_users(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    await store.upsert_user("u2", name="Old", avatar_url="https://img.example/old.png", created_at=7)
    text = (
        "userId,name,avatarUrl,createdAt\n"
        "u1,Alice,https://img.example/a.png,1700000000000\n"
        "u2,Bea,,\n"
        "u3,Carl,ftp://nope\n"
        "u4\n"
    )
    before = now_ms()
    summary = await import_users(store, user_rows(lines(text), Format.CSV))
    after = now_ms()
    assert (summary.rows, summary.written, summary.unchanged, summary.rejected) == (4, 3, 0, 1)
    assert summary.errors == [RowError(4, "The avatar URL must be an absolute http:// or https:// URL.")]
    u1, u2, u3, u4 = await store.profiles(["u1", "u2", "u3", "u4"])
    assert u1 == Profile("u1", "Alice", "https://img.example/a.png", 1_700_000_000_000)
    # An upsert: the name changes, the avatar and the registration time stay.
    assert u2 == Profile("u2", "Bea", "https://img.example/old.png", 7)
    assert u3 is None
    assert u4 is not None and u4.name is None and before - 1000 <= u4.created_at <= after + 1000


async def test_import_users_stop(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    text = '{"userId": "u1"}\n{"userId": "u 2"}\n{"userId": "u3"}\n'
    summary = await import_users(store, user_rows(lines(text), Format.JSONL), on_error=OnError.STOP)
    assert (summary.rows, summary.written, summary.rejected, summary.stopped_at) == (2, 1, 1, 2)
    assert await store.registered(["u1", "u3"]) == [True, False]


# -- export and re-import -------------------------------------------------------------------------


async def build_graph(store: FollowStore) -> None:
    """A demo graph plus users whose profiles stress CSV quoting and edges with server times."""
    await load_demo(store, DemoSpec(users=120, seed=7), now_ms=NOW)
    await store.upsert_user(
        "zoe",
        name='Zoë "Z" 李, Jr.',
        avatar_url="https://img.example/z.png?a=1,2&b=%22",
        created_at=1_600_000_000_000,
    )
    await store.upsert_user("bare")
    await store.follow(follower="zoe", followee="1", at=1_600_000_000_001)
    await store.follow(follower="1", followee="zoe", at=1_600_000_000_002)
    await store.follow(follower="bare", followee="zoe")
    await store.follow(follower="zoe", followee="bare")


@pytest.mark.parametrize("fmt", [Format.CSV, Format.JSONL])
async def test_export_then_import_into_an_empty_store_gives_the_same_graph(
    real_redis: aioredis.Redis, fmt: Format
) -> None:
    store = FollowStore(real_redis)
    await build_graph(store)
    profiles = await all_profiles(store)
    user_ids = [p.user_id for p in profiles]
    assert len(user_ids) == 122
    graph = await snapshot(store, user_ids)
    edges = sum(len(graph[(u, ListKind.FOLLOWING)]) for u in user_ids)
    assert edges > 1000
    assert sum(len(graph[(u, ListKind.MUTUAL)]) for u in user_ids) > 20
    assert graph[("zoe", ListKind.MUTUAL)][1] == ("1", 1_600_000_000_002)
    keys_before = await real_redis.dbsize()

    users_out, edges_out = io.StringIO(), io.StringIO()
    assert await export_users(store, users_out, fmt) == 122
    assert await export_edges(store, edges_out, fmt) == edges
    if fmt is Format.CSV:
        assert users_out.getvalue().startswith(
            "userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans\n"
        )
        assert edges_out.getvalue().startswith("follower,followee,followed_at\n")
        assert len(edges_out.getvalue().splitlines()) == edges + 1
    else:
        assert len(edges_out.getvalue().splitlines()) == edges

    await real_redis.flushall()
    assert await is_empty(store)
    users_in = await import_users(store, user_rows(io.StringIO(users_out.getvalue(), newline=""), fmt))
    assert (users_in.rows, users_in.written, users_in.rejected) == (122, 122, 0)
    edges_in = await import_edges(
        store, edge_rows(io.StringIO(edges_out.getvalue(), newline=""), fmt), register_missing=False
    )
    assert (edges_in.rows, edges_in.written, edges_in.unchanged, edges_in.rejected) == (edges, edges, 0, 0)

    assert await all_profiles(store) == profiles
    assert await snapshot(store, user_ids) == graph
    assert await real_redis.dbsize() == keys_before


async def test_edges_alone_reimported_register_their_users(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    await load_demo(store, DemoSpec(users=60, seed=3), now_ms=NOW)
    user_ids = [str(i) for i in range(1, 61)]
    graph = await snapshot(store, user_ids)
    out = io.StringIO()
    edges = await export_edges(store, out, Format.JSONL)
    await real_redis.flushall()
    summary = await import_edges(store, edge_rows(io.StringIO(out.getvalue()), Format.JSONL))
    assert (summary.rows, summary.written, summary.rejected) == (edges, edges, 0)
    # Users without any follow are not in an edge export; everyone else is back with the same lists.
    in_graph = [u for u in user_ids if graph[(u, ListKind.FOLLOWING)] or graph[(u, ListKind.FANS)]]
    assert [p.user_id for p in await all_profiles(store)] == sorted(in_graph)
    assert await snapshot(store, in_graph) == {k: v for k, v in graph.items() if k[0] in in_graph}


async def test_export_of_an_empty_store(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    csv_out, jsonl_out = io.StringIO(), io.StringIO()
    assert await export_edges(store, csv_out, Format.CSV) == 0
    assert await export_users(store, jsonl_out, Format.JSONL) == 0
    assert csv_out.getvalue() == "follower,followee,followed_at\n"
    assert jsonl_out.getvalue() == ""


async def test_export_reads_every_follow_on_each_backend(backend: Client) -> None:
    """The first FIRST_READ entries of each following set come on the export's read channel (one
    Redis' connection, the cluster's nodes at once; redis-py's pipeline on fakeredis), a bigger
    set's rest a chunk at a time after it."""
    store = FollowStore(backend)
    at = 1_700_000_000_000
    follows = [("big", f"f{i}", at + i) for i in range(FIRST_READ + 150)]
    follows += [(f"f{i}", "big", at + 5_000 + i) for i in range(40)]
    rows = [(n, Edge(a, b, t)) for n, (a, b, t) in enumerate(follows, 1)]
    assert (await import_edges(store, rows)).written == len(follows)
    out = io.StringIO()
    assert await export_edges(store, out, Format.CSV) == len(follows)
    header, *lines = out.getvalue().splitlines()
    assert header == "follower,followee,followed_at"
    assert sorted(lines) == sorted(f"{a},{b},{t}" for a, b, t in follows)


# -- a big file -----------------------------------------------------------------------------------


async def test_twenty_thousand_edges(real_redis: aioredis.Redis) -> None:
    """1000 users each follow the next 20 (mod 1000): 20,000 edges, none mutual, plus 25 bad rows."""
    store = FollowStore(real_redis)
    out = ["follower,followee,followed_at\n"]
    bad_lines: list[int] = []
    for i in range(1000):
        for k in range(1, 21):
            out.append(f"u{i},u{(i + k) % 1000},{1_700_000_000_000 + i * 100 + k}\n")
            if len(out) % 800 == 0:
                out.append(f"u{i},u{i},1\n")
                bad_lines.append(len(out))
    assert len(bad_lines) == 25
    progress: list[int] = []
    summary = await import_edges(store, edge_rows(lines("".join(out)), Format.CSV), progress=progress.append)
    assert isinstance(summary, Summary)
    assert (summary.rows, summary.written, summary.unchanged, summary.rejected) == (20_025, 20_000, 0, 25)
    assert len(summary.errors) == MAX_REPORTED_ERRORS
    assert [e.line for e in summary.errors] == bad_lines[:MAX_REPORTED_ERRORS]
    assert progress[-1] == 20_025
    ids = [f"u{i}" for i in range(1000)]
    assert await store.counts(ids) == [Counts(20, 20, 0)] * 1000
    assert len(await all_profiles(store)) == 1000
    page = await store.page(ListKind.FOLLOWING, "u999", first=3)
    assert [(e.user_id, e.at) for e in page.entries] == [
        ("u19", 1_700_000_099_920),
        ("u18", 1_700_000_099_919),
        ("u17", 1_700_000_099_918),
    ]


# -- settings in user rows ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("FALSE", False),
        (" True ", True),
        ("", None),
        (None, None),
    ],
)
def test_parse_flag_accepts(raw: Any, expected: bool | None) -> None:
    assert parse_flag(raw, "locked") == expected


@pytest.mark.parametrize("raw", ["yes", "1", "0", 1, 0, "t", [True]])
def test_parse_flag_rejects(raw: Any) -> None:
    with pytest.raises(ValueError, match=r"bad locked .*: use true or false \(or leave it empty\)"):
        parse_flag(raw, "locked")


def test_user_rows_with_settings() -> None:
    csv_text = (
        "userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans\n"  # 1
        "u1,Alice,,5,true,false,true\n"  # 2
        "u2,,,,,,\n"  # 3: every setting left as it is
        "u3,,,,false\n"  # 4: short row: the others left as they are
        "u4,,,,yes,false,false\n"  # 5
        "u5,,,,true,false,maybe\n"  # 6
    )
    assert list(user_rows(lines(csv_text), Format.CSV)) == [
        (2, UserRow("u1", "Alice", None, 5, locked=True, hide_following=False, hide_fans=True)),
        (3, UserRow("u2")),
        (4, UserRow("u3", locked=False)),
        (5, RowError(5, "bad locked 'yes': use true or false (or leave it empty)")),
        (6, RowError(6, "bad hideFans 'maybe': use true or false (or leave it empty)")),
    ]
    jsonl_text = (
        '{"userId": "u1", "locked": true, "hideFollowing": false, "hideFans": null}\n'  # 1
        '{"userId": "u2", "hideFans": "true"}\n'  # 2
        '{"userId": "u3", "hideFollowing": 1}\n'  # 3
    )
    assert list(user_rows(lines(jsonl_text), Format.JSONL)) == [
        (1, UserRow("u1", locked=True, hide_following=False)),
        (2, UserRow("u2", hide_fans=True)),
        (3, RowError(3, "bad hideFollowing '1': use true or false (or leave it empty)")),
    ]


async def test_import_users_sets_and_clears_settings(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    await store.upsert_user("u2", name="Bea", created_at=7)
    await store.update_settings("u2", locked=True, hide_fans=True)
    text = (
        "userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans\n"
        "u1,Alice,,5,true,true,false\n"
        "u2,,,,false,,\n"  # unlocks; hideFans stays on
        "u3\n"
    )
    summary = await import_users(store, user_rows(lines(text), Format.CSV))
    assert (summary.rows, summary.written, summary.rejected) == (3, 3, 0)
    u1, u2, u3 = await store.profiles(["u1", "u2", "u3"])
    assert u1 == Profile("u1", "Alice", None, 5, UserSettings(locked=True, hide_following=True))
    assert u2 == Profile("u2", "Bea", None, 7, UserSettings(hide_fans=True))
    assert u3 is not None and u3.settings == UserSettings()
    # A setting that is off is no field at all, as updateSettings leaves it.
    assert await real_redis.hgetall(store.keys.profile("u2")) == {
        "name": "Bea",
        "createdAt": "7",
        "hideFans": "1",
    }


async def test_export_users_writes_the_settings(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    await store.upsert_user("u1", name="Alice", created_at=5)
    await store.update_settings("u1", locked=True, hide_following=True)
    csv_out, jsonl_out = io.StringIO(), io.StringIO()
    assert await export_users(store, csv_out, Format.CSV) == 1
    assert await export_users(store, jsonl_out, Format.JSONL) == 1
    assert csv_out.getvalue() == (
        "userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans\nu1,Alice,,5,true,true,false\n"
    )
    assert jsonl_out.getvalue() == (
        '{"userId": "u1", "name": "Alice", "avatarUrl": null, "createdAt": 5, '
        '"locked": true, "hideFollowing": true, "hideFans": false}\n'
    )


# -- control_rows ---------------------------------------------------------------------------------


def test_control_rows_csv_errors_carry_their_line_numbers() -> None:
    text = (
        "kind,actor,target,at\n"  # 1
        "BLOCK,alice,bob,1700000000000\n"  # 2
        "mute,alice,carol,2024-01-01T00:00:00Z\n"  # 3: any case
        "REQUEST,bob,carol,\n"  # 4: now
        "FOLLOW,alice,bob,1\n"  # 5: unknown kind
        "BLOCK,alice,alice,1\n"  # 6: self-block
        "MUTE,bob,bob,1\n"  # 7: self-mute
        "REQUEST,carol,carol,1\n"  # 8: self-request
        "BLOCK,alice,bob,soon\n"  # 9: bad time
        "\n"  # 10
        "BLOCK,alice,b b,1\n"  # 11: malformed target
        ",alice,bob,1\n"  # 12: no kind
    )
    assert list(control_rows(lines(text), Format.CSV)) == [
        (2, Control(ControlKind.BLOCK, "alice", "bob", 1_700_000_000_000)),
        (3, Control(ControlKind.MUTE, "alice", "carol", T2024)),
        (4, Control(ControlKind.REQUEST, "bob", "carol", None)),
        (5, RowError(5, "unknown kind 'FOLLOW': use BLOCK, MUTE or REQUEST")),
        (6, RowError(6, "a user cannot block themselves")),
        (7, RowError(7, "a user cannot mute themselves")),
        (8, RowError(8, "a user cannot ask to follow themselves")),
        (9, RowError(9, "bad time 'soon': use epoch milliseconds or ISO-8601 with a zone, from 1970 on")),
        (11, RowError(11, f"Invalid user id 'b b': {BAD_ID}")),
        (12, RowError(12, "unknown kind '': use BLOCK, MUTE or REQUEST")),
    ]


def test_control_rows_jsonl() -> None:
    text = (
        '{"kind": "REQUEST", "actor": "a", "target": "b", "at": 5}\n'  # 1
        '{"kind": "BLOCK", "actor": 7, "target": 8}\n'  # 2
        '{"kind": true, "actor": "a", "target": "b"}\n'  # 3
        '{"kind": "MUTE", "actor": "a", "target": null}\n'  # 4
        '{"kind": "MUTE"\n'  # 5
    )
    assert list(control_rows(lines(text), Format.JSONL)) == [
        (1, Control(ControlKind.REQUEST, "a", "b", 5)),
        (2, Control(ControlKind.BLOCK, "7", "8", None)),
        (3, RowError(3, "must be a string, got true")),
        (4, RowError(4, f"Invalid user id '': {BAD_ID}")),
        (5, RowError(5, "not JSON: Expecting ',' delimiter")),
    ]


# -- import_controls on the real Redis and the cluster --------------------------------------------


async def members(store: FollowStore, key: str) -> list[tuple[str, int]]:
    rows = cast("list[tuple[str, float]]", await store.redis.zrange(key, 0, -1, withscores=True))
    return [(member, int(score)) for member, score in rows]


async def test_import_controls(served_redis: Client) -> None:
    store = FollowStore(served_redis)
    k = store.keys
    edges = "alice,bob,1\nbob,alice,2\ncarol,alice,3\ndave,erin,4\n"
    await import_edges(store, edge_rows(lines(edges), Format.CSV, header=False))
    pending = await import_controls(
        store, control_rows(lines("REQUEST,erin,dave,600\n"), Format.CSV, header=False)
    )
    assert (pending.written, pending.rejected) == (1, 0)
    assert await members(store, k.requests_in("dave")) == [("erin", 600)]
    text = (
        "kind,actor,target,at\n"  # 1
        "BLOCK,alice,bob,100\n"  # 2: ends the follows both ways
        "MUTE,carol,alice,2024-01-01T00:00:00Z\n"  # 3
        "REQUEST,carol,erin,300\n"  # 4
        "REQUEST,bob,alice,400\n"  # 5: across the block
        "REQUEST,carol,alice,500\n"  # 6: carol follows alice already
        "BLOCK,dave,erin,700\n"  # 7: ends dave's follow and erin's pending request
        "REQUEST,erin,dave,800\n"  # 8: across the block
        "BLOCK,alice,bob,999\n"  # 9: again: the first time stays
        "SHOUT,alice,bob,1\n"  # 10
    )
    before = await dump(served_redis)
    summary = await import_controls(store, control_rows(lines(text), Format.CSV))
    assert (summary.rows, summary.written, summary.unchanged, summary.rejected) == (9, 4, 1, 4)
    assert summary.errors == [
        RowError(5, "one of the two users blocks the other"),
        RowError(6, "user 'carol' already follows 'alice'"),
        RowError(8, "one of the two users blocks the other"),
        RowError(10, "unknown kind 'SHOUT': use BLOCK, MUTE or REQUEST"),
    ]
    assert await members(store, k.blocking("alice")) == [("bob", 100)]
    assert await members(store, k.blocked_by("bob")) == [("alice", 100)]
    assert await members(store, k.blocking("dave")) == [("erin", 700)]
    assert await members(store, k.blocked_by("erin")) == [("dave", 700)]
    assert await members(store, k.muting("carol")) == [("alice", T2024)]
    assert await members(store, k.requests_out("carol")) == [("erin", 300)]
    assert await members(store, k.requests_in("erin")) == [("carol", 300)]
    for user, other in (("alice", "bob"), ("bob", "alice"), ("dave", "erin"), ("erin", "dave")):
        for key in (k.following, k.fans, k.mutual, k.requests_in, k.requests_out):
            assert other not in dict(await members(store, key(user))), (user, key.__name__)
    assert await members(store, k.following("carol")) == [("alice", 3)]
    changed = await dump(served_redis)
    assert changed != before

    again = await import_controls(store, control_rows(lines(text), Format.CSV))
    assert (again.rows, again.written, again.unchanged, again.rejected) == (9, 0, 5, 4)
    assert [e.line for e in again.errors] == [5, 6, 8, 10]
    assert await dump(served_redis) == changed


async def test_import_controls_without_registering_missing_users(served_redis: Client) -> None:
    store = FollowStore(served_redis)
    for user_id in ("alice", "bob"):
        await store.upsert_user(user_id)
    text = "BLOCK,alice,bob,1\nMUTE,alice,xavier,2\nREQUEST,yves,alice,3\nMUTE,bob,alice,4\n"
    summary = await import_controls(
        store, control_rows(lines(text), Format.CSV, header=False), register_missing=False
    )
    assert (summary.rows, summary.written, summary.rejected) == (4, 2, 2)
    assert summary.errors == [
        RowError(2, "user 'xavier' is not registered"),
        RowError(3, "user 'yves' is not registered"),
    ]
    assert await store.registered(["xavier", "yves"]) == [False, False]
    assert await members(store, store.keys.muting("alice")) == []


async def test_import_controls_registers_missing_users_and_stops(served_redis: Client) -> None:
    store = FollowStore(served_redis)
    text = "MUTE,a,b,1\nBLOCK,b,b,2\nMUTE,c,d,3\n"
    summary = await import_controls(
        store, control_rows(lines(text), Format.CSV, header=False), on_error=OnError.STOP
    )
    assert (summary.rows, summary.written, summary.rejected, summary.stopped_at) == (2, 1, 1, 2)
    assert await store.registered(["a", "b", "c", "d"]) == [True, True, False, False]


async def test_import_controls_reports_progress_per_batch(real_redis: aioredis.Redis) -> None:
    store = FollowStore(real_redis)
    seen: list[int] = []
    text = "".join(f"MUTE,u{i},hub,{i}\n" for i in range(BATCH + 10))
    summary = await import_controls(
        store, control_rows(lines(text), Format.CSV, header=False), progress=seen.append
    )
    assert (summary.written, seen) == (BATCH + 10, [BATCH, BATCH + 10])


@pytest.mark.parametrize(("blocker", "blocked"), [("ann", "bob"), ("bob", "ann")])
async def test_a_block_between_the_steps_of_an_imported_request_drops_it(
    redis_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch, blocker: str, blocked: str
) -> None:
    # Two steps only on a cluster.
    client = await Backend("cluster", redis_cluster.url).clean_client()
    store = FollowStore(client)
    assert store.cluster
    for user_id in ("ann", "bob"):
        await store.upsert_user(user_id)
    await load_control_scripts(store)
    second_step = cs.REQUEST_AT_IN_SCRIPT.run

    async def block_first(*args: Any) -> Any:
        # A block after ann's side of ann's request to bob was written, before bob's side.
        await store.block(blocker=blocker, blocked=blocked)
        return await second_step(*args)

    monkeypatch.setattr(cs.REQUEST_AT_IN_SCRIPT, "run", block_first)
    assert await control_many(store, [Control(ControlKind.REQUEST, "ann", "bob", 5)], 0) == [
        ControlStatus.BLOCKED
    ]
    monkeypatch.undo()
    k = store.keys
    for user in ("ann", "bob"):
        assert await members(store, k.requests_out(user)) == []
        assert await members(store, k.requests_in(user)) == []
    assert [m for m, _ in await members(store, k.blocking(blocker))] == [blocked]
    assert (await verify(store)).clean
    await client.aclose()


# -- the whole graph with its controls, exported and re-imported ----------------------------------


async def build_graph_with_controls(store: FollowStore) -> None:
    await build_graph(store)
    await store.update_settings("5", locked=True, hide_fans=True)
    await store.update_settings("6", hide_following=True)
    await store.update_settings("zoe", locked=True, hide_following=True, hide_fans=True)
    requests = 0
    for follower in [str(i) for i in range(60, 121)] + ["bare"]:
        for followee in ("5", "zoe"):
            requests += (await store.follow(follower=follower, followee=followee)).pending
    assert requests > 10
    await store.block(blocker="1", blocked="2")
    await store.block(blocker="3", blocked="1")
    await store.block(blocker="5", blocked="60")  # ends a pending request
    await store.block(blocker="zoe", blocked="bare")  # ends follows both ways
    await store.mute(muter="1", muted="4")
    await store.mute(muter="4", muted="1")
    await store.mute(muter="bare", muted="zoe")


@pytest.mark.parametrize("fmt", [Format.CSV, Format.JSONL])
async def test_export_then_import_carries_the_controls(served_redis: Client, fmt: Format) -> None:
    store = FollowStore(served_redis)
    await build_graph_with_controls(store)
    graph = await dump(served_redis)
    names = {key.rsplit(":", 1)[1] for key in graph}
    assert {"blocking", "blocked_by", "muting", "requests_in", "requests_out"} <= names
    profiles = [value for kind, value in graph.values() if kind == "hash"]
    assert sum(1 for p in profiles if isinstance(p, dict) and "locked" in p) == 2
    assert sum(1 for p in profiles if isinstance(p, dict) and "hideFollowing" in p) == 2

    exported: dict[str, str] = {}
    counts: dict[str, int] = {}
    for name, export in (("users", export_users), ("edges", export_edges), ("controls", export_controls)):
        out = io.StringIO()
        counts[name] = await export(store, out, fmt)
        exported[name] = out.getvalue()
    blocks = sum(1 for key in graph if key.endswith(":blocking"))
    assert counts["users"] == 122
    sources = [
        value for key, (_, value) in graph.items() if key.endswith((":blocking", ":muting", ":requests_out"))
    ]
    assert counts["controls"] == sum(len(value) for value in sources if isinstance(value, list))
    assert blocks == 4
    if fmt is Format.CSV:
        assert exported["controls"].startswith("kind,actor,target,at\nBLOCK,")
        assert "\nREQUEST,60,zoe," in exported["controls"]

    def rows(name: str) -> io.StringIO:
        return io.StringIO(exported[name], newline="")

    await served_redis.flushall()
    assert await is_empty(store)
    users_in = await import_users(store, user_rows(rows("users"), fmt))
    edges_in = await import_edges(store, edge_rows(rows("edges"), fmt), register_missing=False)
    controls_in = await import_controls(store, control_rows(rows("controls"), fmt), register_missing=False)
    assert (users_in.written, users_in.rejected) == (122, 0)
    assert (edges_in.written, edges_in.rejected) == (counts["edges"], 0)
    assert (controls_in.written, controls_in.unchanged, controls_in.rejected) == (counts["controls"], 0, 0)
    assert graph_only(await dump(served_redis)) == graph_only(graph)

    # Everything again: nothing changes.
    await import_users(store, user_rows(rows("users"), fmt))
    edges_again = await import_edges(store, edge_rows(rows("edges"), fmt), register_missing=False)
    controls_again = await import_controls(store, control_rows(rows("controls"), fmt))
    assert (edges_again.written, edges_again.unchanged) == (0, counts["edges"])
    assert (controls_again.written, controls_again.unchanged) == (0, counts["controls"])
    assert graph_only(await dump(served_redis)) == graph_only(graph)
