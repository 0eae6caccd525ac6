"""`followgraph import` of follows in batches: exact lists and counts, re-runs that change nothing,
blocks and requests, a run killed midway and taken up from its checkpoint, imports straight from
PostgreSQL, MariaDB and SQLite, and the SQL copy fed from the batches' events (on the test Redis
and the test cluster)."""

from __future__ import annotations

import asyncio
import io
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import pytest
from sqlalchemy import text

from followgraph.cli.edge_import import EDGE_BATCH
from followgraph.server.redis_client import connect
from followgraph.store import FollowStore
from followgraph.store.graph.events import EventKind
from followgraph.store.log.stream import EventLog
from followgraph.store.sql.apply import apply_events
from followgraph.store.sql.engine import create_engine
from followgraph.store.sql.mirror import compare, read_redis, read_sql
from tests.cli.clis import KEYS, Target, invoke

pytestmark = pytest.mark.usefixtures("clean_environment")

Edges = list[tuple[str, str, int]]


def graph_file(path: Path, edges: Edges) -> Path:
    path.write_text("follower,followee,followed_at\n" + "".join(f"{a},{b},{t}\n" for a, b, t in edges))
    return path


def random_edges(count: int, users: int, seed: int) -> Edges:
    """Follows among `users` users, a third of them to a few popular ones, some repeated with
    another time (the first one's stays), and many both ways (mutual)."""
    rng = random.Random(seed)
    edges: Edges = []
    while len(edges) < count:
        a = rng.randrange(users)
        b = rng.randrange(5) if rng.random() < 0.3 else rng.randrange(users)
        if a == b:
            continue
        t = 1_700_000_000_000 + rng.randrange(10**9)
        edges.append((f"u{a}", f"u{b}", t))
        if rng.random() < 0.2:
            edges.append((f"u{b}", f"u{a}", t + rng.randrange(-5000, 5000)))
        if rng.random() < 0.05:
            edges.append((f"u{a}", f"u{b}", t + 1))
    return edges


def expected(edges: Edges) -> dict[str, dict[str, dict[str, int]]]:
    """Each user's following, fans and mutual sets as the API makes them: a follow keeps its first
    time, a mutual pair the later of its two follows'."""
    following: dict[str, dict[str, int]] = {}
    for a, b, t in edges:
        following.setdefault(a, {}).setdefault(b, t)
    out: dict[str, dict[str, dict[str, int]]] = {}
    for a, followed in following.items():
        for b, t in followed.items():
            out.setdefault(a, {"following": {}, "fans": {}, "mutual": {}})["following"][b] = t
            out.setdefault(b, {"following": {}, "fans": {}, "mutual": {}})["fans"][a] = t
            back = following.get(b, {}).get(a)
            if back is not None:
                out[a]["mutual"][b] = max(t, back)
    return out


def lists(target: Target, user: str) -> dict[str, dict[str, int]]:
    out = {}
    for name in ("following", "fans", "mutual"):
        rows = cast(
            "list[tuple[str, float]]", target.db.zrange(KEYS.of_list(name, user), 0, -1, withscores=True)
        )
        out[name] = {member: int(score) for member, score in rows}
    return out


def assert_graph(target: Target, edges: Edges) -> None:
    want = expected(edges)
    for user, sets in want.items():
        assert lists(target, user) == sets, user
    assert target.profiles() == len(want)


def log_length(target: Target) -> int:
    keys = list(target.db.scan_iter(match="fg:*log", _type="stream"))
    return sum(int(target.db.xlen(key)) for key in keys)


def test_lists_and_counts_are_exact_and_a_rerun_changes_nothing(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    edges = random_edges(3 * EDGE_BATCH // 2, 400, seed=1)
    source = graph_file(tmp_path / "edges.csv", edges)
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 0, console.getvalue()
    assert_graph(target, edges)
    unique = len({(a, b) for a, b, _ in edges})
    assert (
        f"{unique:,} follows written, {len(edges) - unique:,} already there, 0 rejected."
        in console.getvalue()
    )

    keys = sorted(target.db.scan_iter(match="fg:{u:*"))
    before = {key: target.db.dump(key) for key in keys}
    events = log_length(target)
    console.truncate(0)
    console.seek(0)
    again = invoke("import", str(source), *target.options())
    assert again.exit_code == 0, console.getvalue()
    assert f"0 follows written, {len(edges):,} already there" in console.getvalue()
    assert "Going on from" not in console.getvalue()  # a finished import leaves no checkpoint
    assert sorted(target.db.scan_iter(match="fg:{u:*")) == keys
    assert {key: target.db.dump(key) for key in keys} == before
    assert log_length(target) == events  # a re-run logs nothing


def test_blocks_are_refused_and_a_follow_ends_a_pending_request(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    users = tmp_path / "users.csv"
    users.write_text("userId,locked\nann,\nbob,\ncid,\nlea,true\n")
    assert invoke("import", str(users), "--kind", "users", *target.options()).exit_code == 0
    controls = tmp_path / "controls.csv"
    controls.write_text("kind,actor,target,at\nBLOCK,bob,ann,5\nREQUEST,cid,lea,6\n")
    assert invoke("import", str(controls), "--kind", "controls", *target.options()).exit_code == 0
    source = graph_file(tmp_path / "edges.csv", [("ann", "bob", 10), ("bob", "ann", 11), ("cid", "lea", 12)])
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 1
    text_out = console.getvalue()
    assert "line 2: one of the two users blocks the other" in text_out
    assert "line 3: one of the two users blocks the other" in text_out
    assert target.following("ann") == {} and target.following("bob") == {}
    assert target.following("cid") == {"lea": 12}
    assert target.db.zscore(KEYS.requests_out("cid"), "lea") is None
    assert target.db.zscore(KEYS.requests_in("lea"), "cid") is None


def _checkpoint(target: Target) -> dict[str, str]:
    # One SCAN call: the import is quick, and a key made during a scan of many calls may be missed.
    for key in target.db.scan_iter(match="fg:import:*", count=1_000_000):
        return cast("dict[str, str]", target.db.hgetall(key))
    return {}


def test_a_killed_import_goes_on_from_its_checkpoint(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    edges = random_edges(12 * EDGE_BATCH, 3000, seed=2)
    source = graph_file(tmp_path / "edges.csv", edges)
    command = [sys.executable, "-m", "followgraph.cli", "import", str(source), *target.options()]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while int(_checkpoint(target).get("line") or 0) < 2 * EDGE_BATCH:
            assert child.poll() is None, "the import ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    line = int(_checkpoint(target)["line"])
    assert line < len(edges), "killed too late"

    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 0, console.getvalue()
    # Redis still runs what the killed import had sent, so a last batch and its checkpoint can
    # land after the read above: the run goes on from there or later.
    resumed = re.search(rf"Going on from line ([\d,]+) of {re.escape(str(source))}", console.getvalue())
    assert resumed is not None, console.getvalue()
    assert line <= int(resumed[1].replace(",", "")) < len(edges)
    assert f"{len(edges):,} rows in " in console.getvalue()
    assert _checkpoint(target) == {}
    assert_graph(target, edges)
    assert invoke("verify", *target.options()).exit_code == 0


def test_a_file_changed_before_its_checkpoint_is_imported_from_the_start(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    edges = random_edges(2 * EDGE_BATCH, 500, seed=3)
    source = graph_file(tmp_path / "edges.csv", edges)
    stopped = graph_file(tmp_path / "stopped.csv", [*edges[:EDGE_BATCH], ("x", "x", 1), *edges[EDGE_BATCH:]])
    result = invoke("import", str(stopped), "--on-error", "stop", *target.options())
    assert result.exit_code == 1
    assert int(_checkpoint(target).get("line") or 0) > 0  # a stopped import keeps its checkpoint
    stopped.write_bytes(source.read_bytes().replace(b"u", b"v", 1))
    console.truncate(0)
    console.seek(0)
    again = invoke("import", str(stopped), *target.options())
    assert again.exit_code == 0, console.getvalue()
    assert "is not the file an earlier import stopped in" in console.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_standard_input_and_json_lines(target: Target, console: io.StringIO, fmt: str) -> None:
    edges = random_edges(300, 40, seed=4)
    if fmt == "csv":
        data = "follower,followee,followed_at\n" + "".join(f"{a},{b},{t}\n" for a, b, t in edges)
    else:
        data = "".join(f'{{"follower": "{a}", "followee": "{b}", "followed_at": {t}}}\n' for a, b, t in edges)
    result = invoke("import", "-", "--format", fmt, *target.options(), input=data)
    assert result.exit_code == 0, console.getvalue()
    assert_graph(target, edges)


# -- straight from a database ---------------------------------------------------------------------


async def _source_table(url: str, rows: list[tuple[object, object, object]]) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("DROP TABLE IF EXISTS old_follows"))
            await connection.execute(
                text(
                    "CREATE TABLE old_follows (id INTEGER PRIMARY KEY, follower VARCHAR(64), "
                    "followee BIGINT, created_at TIMESTAMP NULL)"
                )
            )
            await connection.execute(
                text("INSERT INTO old_follows VALUES (:id, :a, :b, :t)"),
                [{"id": i, "a": a, "b": b, "t": t} for i, (a, b, t) in enumerate(rows)],
            )
    finally:
        await engine.dispose()


async def _drop_source_table(url: str) -> None:
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text("DROP TABLE IF EXISTS old_follows"))
    finally:
        await engine.dispose()


async def test_from_sql_streams_a_query_from_each_database(
    sql_url: str, target: Target, console: io.StringIO
) -> None:
    import datetime

    moment = datetime.datetime(2024, 1, 1, 0, 0, 0)  # no zone: UTC
    rows: list[tuple[object, object, object]] = [(f"u{i}", 1000 + i % 7, moment) for i in range(2500)]
    rows += [("u1", 1002, None), ("bad id", 1003, moment), ("1001", 1001, moment)]
    await _source_table(sql_url, rows)
    query = "SELECT follower, followee, created_at FROM old_follows ORDER BY id"
    try:
        result = await asyncio.to_thread(
            invoke, "import", "--from-sql", sql_url, "--query", query, *target.options()
        )
    finally:  # the run's database holds the copy's tables alone (tests/store/sql/test_migrations.py)
        await _drop_source_table(sql_url)
    assert result.exit_code == 1, console.getvalue()
    said = console.getvalue()
    assert "2,503 rows in " in said
    assert "row 2,502: Invalid user id 'bad id'" in said
    assert "row 2,503: a user cannot follow themselves" in said
    assert target.following("u8") == {"1001": 1_704_067_200_000}
    assert set(target.following("u1")) == {"1001", "1002"}  # the null time is now
    assert len(cast("list[str]", target.db.zrange(KEYS.fans("1000"), 0, -1))) == 358


async def test_from_sql_refuses_what_it_cannot_read(
    target: Target, console: io.StringIO, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    result = await asyncio.to_thread(
        invoke, "import", "--from-sql", url, "--query", "SELECT 1 FROM nowhere", *target.options()
    )
    assert result.exit_code == 1
    assert "Cannot read sqlite:///" in console.getvalue() and "nowhere" in console.getvalue()
    missing = await asyncio.to_thread(invoke, "import", "--from-sql", url, *target.options())
    assert missing.exit_code == 2
    assert "--from-sql needs --query" in console.getvalue()


# -- the SQL copy -----------------------------------------------------------------------------------


async def test_the_copy_fed_from_the_log_matches_redis(
    copy_url: str, target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    edges = random_edges(EDGE_BATCH + 300, 600, seed=5)
    source = graph_file(tmp_path / "edges.csv", edges)
    result = await asyncio.to_thread(invoke, "import", str(source), *target.options())
    assert result.exit_code == 0, console.getvalue()
    again = await asyncio.to_thread(invoke, "import", str(source), *target.options())
    assert again.exit_code == 0, console.getvalue()
    client = connect(target.url)
    engine = create_engine(copy_url)
    try:
        store = FollowStore(client)
        log = EventLog(store)
        events = await log.read(count=100_000)  # every event (on a cluster, of every slot's stream)
        imports = [e for e in events if e.kind is EventKind.IMPORT]
        assert imports and all(not e.kind.relation for e in imports)
        assert sum(len(e.imported_follows()) for e in imports) == len({(a, b) for a, b, _ in edges})
        await apply_events(engine, events)
        await apply_events(engine, list(reversed(events)))  # applied twice, in any order: the same copy
        differences = compare(await read_sql(engine), await read_redis(store))
        assert differences.total == 0, differences.examples
    finally:
        await engine.dispose()
        await client.aclose()
