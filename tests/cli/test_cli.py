"""The `followgraph` command line, run in-process with typer's CliRunner against the test Redis and
the test cluster."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

import followgraph.cli.main as cli
from followgraph.cli import files
from followgraph.cli.demo import DemoSpec, demo_edges
from followgraph.cli.records import Format
from followgraph.resolvers.context import ADMIN_SCOPE
from followgraph.server.redis_cluster import free_cluster_ports, port_is_free
from followgraph.server.redis_server import RedisServer, answers, socket_path_for
from followgraph.server.settings import Settings
from followgraph.transport.auth import Principal, authenticate
from tests.cli.clis import KEYS, Target, invoke
from tests.server.processes import redis_pids

pytestmark = pytest.mark.usefixtures("clean_environment")


def principal(token: str, data_dir: Path) -> Principal | None:
    return authenticate("Bearer " + token, Settings(data_dir=data_dir).auth_config())


# -- token and export-schema ----------------------------------------------------------------------


def test_token_is_accepted_by_the_server(tmp_path: Path, console: io.StringIO) -> None:
    result = invoke("token", "alice", "--data-dir", str(tmp_path))
    assert result.exit_code == 0, console.getvalue()
    token = result.stdout.strip()
    assert result.stdout == token + "\n"
    assert token.count(".") == 2
    assert principal(token, tmp_path) == Principal("alice", frozenset())
    assert (tmp_path / "jwt-secret").exists()


def test_admin_token(tmp_path: Path, console: io.StringIO) -> None:
    result = invoke("token", "alice", "--admin", "--data-dir", str(tmp_path))
    assert result.exit_code == 0, console.getvalue()
    who = principal(result.stdout.strip(), tmp_path)
    assert who == Principal("alice", frozenset({"admin"}))
    assert ADMIN_SCOPE in who.scopes


def test_token_for_a_malformed_user_id(tmp_path: Path, console: io.StringIO) -> None:
    result = invoke("token", "not valid!", "--data-dir", str(tmp_path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Cannot mint a token: Invalid user id 'not valid!'" in console.getvalue()


def test_token_with_a_bad_lifetime_names_the_option(tmp_path: Path, console: io.StringIO) -> None:
    result = invoke("token", "alice", "--ttl", "0", "--data-dir", str(tmp_path))
    assert result.exit_code == 2
    assert result.stdout == ""
    expected = "Cannot mint a token: --ttl 0: A token's lifetime must be 1 to 2592000 seconds, got 0."
    assert expected in console.getvalue()


def test_export_schema(tmp_path: Path) -> None:
    printed = invoke("export-schema")
    assert printed.exit_code == 0
    assert "type User implements Node" in printed.stdout
    assert "type Query" in printed.stdout
    path = tmp_path / "schema.graphql"
    written = invoke("export-schema", "-o", str(path))
    assert written.exit_code == 0
    assert written.stdout == ""
    assert path.read_text() == printed.stdout


def test_export_schema_of_the_federation_subgraph() -> None:
    subgraph = invoke("export-schema", "--federation")
    assert subgraph.exit_code == 0
    assert subgraph.stdout.startswith('schema @link(url: "https://specs.apollo.dev/federation/v2.0"')
    assert 'type User implements Node @key(fields: "userId", resolvable: true)' in subgraph.stdout
    assert "@key" not in invoke("export-schema").stdout


# -- demo -----------------------------------------------------------------------------------------


def test_demo_loads_once(target: Target, console: io.StringIO) -> None:
    # The edge set of a spec does not depend on now_ms (only the times do).
    follows = len(list(demo_edges(DemoSpec(users=200), now_ms=0)))
    result = invoke("demo", "--users", "200", *target.options())
    assert result.exit_code == 0, console.getvalue()
    assert f"Loaded 200 users and {follows:,} follows" in console.getvalue()
    # demo loads data and serves nothing: no address of a server.
    assert "FollowGraph on" not in result.stdout
    assert "http://" not in result.stdout
    assert "Token of demo user 42" in result.stdout
    token = result.stdout.strip().splitlines()[-1]
    assert principal(token, target.data_dir) == Principal("42", frozenset())
    assert target.profiles() == 200
    assert sum(len(target.following(str(i))) for i in range(1, 201)) == follows

    console.seek(0)
    console.truncate()
    again = invoke("demo", "--users", "200", *target.options())
    assert again.exit_code == 1
    assert "The store already has users: nothing loaded." in console.getvalue()
    assert again.stdout == ""
    assert target.profiles() == 200


# -- import and export ----------------------------------------------------------------------------

EDGES = [
    ("alice", "bob", 1_700_000_000_000),
    ("bob", "alice", 1_700_000_000_100),
    ("alice", "carol", 1_700_000_000_200),
    ("carol", "dave", 1_700_000_000_300),
    ("dave", "alice", 1_700_000_000_400),
    ("erin", "alice", 1_700_000_000_500),
]


def edges_csv(path: Path, rows: list[str] | None = None) -> Path:
    lines = ["follower,followee,followed_at", *(rows or [f"{a},{b},{t}" for a, b, t in EDGES])]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_import_then_export_round_trip(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = edges_csv(tmp_path / "edges.csv")
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 0, console.getvalue()
    assert "6 follows written, 0 already there, 0 rejected." in console.getvalue()
    assert target.following("alice") == {"bob": 1_700_000_000_000, "carol": 1_700_000_000_200}

    out = tmp_path / "out.csv"
    exported = invoke("export", str(out), *target.options())
    assert exported.exit_code == 0, console.getvalue()
    assert "Exported 6 edges" in console.getvalue()
    header, *rows = out.read_text().splitlines()
    assert header == "follower,followee,followed_at"
    assert sorted(rows) == sorted(f"{a},{b},{t}" for a, b, t in EDGES)

    out_jsonl = tmp_path / "out.jsonl"
    assert invoke("export", str(out_jsonl), *target.options()).exit_code == 0
    records = [json.loads(line) for line in out_jsonl.read_text().splitlines()]
    assert sorted((r["follower"], r["followee"], r["followed_at"]) for r in records) == sorted(EDGES)

    console.seek(0)
    console.truncate()
    again = invoke("import", str(out), *target.options())
    assert again.exit_code == 0, console.getvalue()
    assert "6 rows" in console.getvalue()
    assert "0 follows written, 6 already there, 0 rejected." in console.getvalue()


def test_import_reports_bad_rows_by_line(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = edges_csv(tmp_path / "edges.csv", ["alice,bob,1", "carol,carol,2", "bob,carol,3", "x y,bob,4"])
    result = invoke("import", str(source), *target.options())
    # Rejected rows make the exit status 1, so a script notices them.
    assert result.exit_code == 1, console.getvalue()
    text = console.getvalue()
    assert "2 rows were rejected: fix them and run the import again." in text
    assert "4 rows" in text
    assert "2 follows written, 0 already there, 2 rejected." in text
    assert "line 3: a user cannot follow themselves" in text
    assert "line 5: Invalid user id 'x y'" in text
    assert target.following("bob") == {"carol": 3}


def test_import_says_which_edges_became_requests(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    target.db.hset(KEYS.profile("lea"), mapping={"createdAt": "1", "locked": "1"})
    source = edges_csv(tmp_path / "edges.csv", ["ann,lea,", "bob,lea,3"])
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 0, console.getvalue()
    text = console.getvalue()
    assert "1 follow written, 0 already there, 0 rejected." in text
    assert "1 follow request pending: the followee is locked and the row has no followed_at" in text
    assert target.following("bob") == {"lea": 3}
    assert target.following("ann") == {}


def test_import_on_error_stop(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = edges_csv(tmp_path / "edges.csv", ["alice,bob,1", "carol,carol,2", "bob,carol,3"])
    result = invoke("import", str(source), "--on-error", "stop", *target.options())
    assert result.exit_code == 1
    text = console.getvalue()
    assert "line 3: a user cannot follow themselves" in text
    assert "Stopped at line 3; rows before it were imported." in text
    assert target.following("alice") == {"bob": 1}
    assert target.following("bob") == {}


def test_import_without_registering_missing_users(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    target.db.hset(KEYS.profile("alice"), "createdAt", "1")
    target.db.hset(KEYS.profile("bob"), "createdAt", "1")
    source = edges_csv(tmp_path / "edges.csv", ["alice,bob,1", "alice,zed,2"])
    result = invoke("import", str(source), "--no-register-missing", *target.options())
    assert result.exit_code == 1, console.getvalue()
    assert "1 row was rejected" in console.getvalue()
    assert "line 3: user 'zed' is not registered" in console.getvalue()
    assert target.following("alice") == {"bob": 1}
    assert target.profiles() == 2


def test_import_users_jsonl(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = tmp_path / "users.jsonl"
    records = [
        {"userId": "alice", "name": "Alice", "avatarUrl": "https://img.example/a.png", "createdAt": 5},
        {"userId": "bob", "name": "Bob"},
        {"userId": "carol", "avatarUrl": "mailto:carol@example.com"},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = invoke("import", str(source), "--kind", "users", *target.options())
    assert result.exit_code == 1, console.getvalue()
    text = console.getvalue()
    assert "3 rows" in text
    assert "2 users written, 0 already there, 1 rejected." in text
    assert "line 3: The avatar URL must be an absolute http:// or https:// URL." in text
    assert target.db.hgetall(KEYS.profile("alice")) == {
        "name": "Alice",
        "avatarUrl": "https://img.example/a.png",
        "createdAt": "5",
    }
    assert target.db.hget(KEYS.profile("bob"), "name") == "Bob"
    assert target.profiles() == 2

    out = tmp_path / "users-out.csv"
    exported = invoke("export", str(out), "--kind", "users", *target.options())
    assert exported.exit_code == 0, console.getvalue()
    lines = out.read_text().splitlines()
    assert lines[0] == "userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans"
    assert "alice,Alice,https://img.example/a.png,5,false,false,false" in lines[1:]


def test_unknown_file_extension(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = tmp_path / "edges.txt"
    source.write_text("alice,bob,1\n")
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 2
    assert f"Cannot tell the format of '{source}': name it *.csv or *.jsonl, or pass --format." in (
        console.getvalue()
    )
    assert target.profiles() == 0

    out = tmp_path / "out.txt"
    exported = invoke("export", str(out), *target.options())
    assert exported.exit_code == 2
    assert "Cannot tell the format of" in console.getvalue()
    assert not out.exists()

    source.write_text("follower,followee,followed_at\nalice,bob,1\n")
    explicit = invoke("import", str(source), "--format", "csv", *target.options())
    assert explicit.exit_code == 0, console.getvalue()
    assert target.following("alice") == {"bob": 1}


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("FOLLOWGRAPH_PORT", "abc", "FOLLOWGRAPH_PORT='abc' is not a whole number."),
        ("FOLLOWGRAPH_WORKERS", "0", "FOLLOWGRAPH_WORKERS=0 is out of range: use 1 to 64."),
        ("FOLLOWGRAPH_PRODUCTION", "maybe", "FOLLOWGRAPH_PRODUCTION='maybe' is not a boolean"),
    ],
)
def test_bad_environment_variable(
    target: Target, console: io.StringIO, variable: str, value: str, message: str
) -> None:
    result = invoke("demo", "--users", "10", *target.options(), env={variable: value})
    assert result.exit_code == 2
    assert "Configuration error: " in console.getvalue()
    assert message in console.getvalue()
    assert result.stdout == ""
    assert target.profiles() == 0


def test_rejected_rows_are_reported_verbatim(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    # Row data is shown as text, not interpreted as rich markup (a "[/x]" must not crash the report).
    source = edges_csv(tmp_path / "edges.csv", ["[bold]x,bob,1", "[/x],bob,2", "alice,bob,3"])
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 1, repr(result.exception)
    text = console.getvalue()
    assert "line 2: Invalid user id '[bold]x'" in text
    assert "line 3: Invalid user id '[/x]'" in text
    assert "1 follow written, 0 already there, 2 rejected." in text


def test_import_of_a_missing_file(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    missing = tmp_path / "missing.csv"
    result = invoke("import", str(missing), *target.options())
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # a message, no traceback
    assert "missing.csv" in console.getvalue() + result.output


# -- the embedded Redis ---------------------------------------------------------------------------


def test_demo_with_the_embedded_redis(tmp_path: Path, console: io.StringIO) -> None:
    data_dir = tmp_path / "data"
    directory = data_dir / "redis"
    try:
        result = invoke("demo", "--users", "50", "--data-dir", str(data_dir))
        assert result.exit_code == 0, console.getvalue()
        assert "Loaded 50 users and" in console.getvalue()
        token = result.stdout.strip().splitlines()[-1]
        assert principal(token, data_dir) == Principal("42", frozenset())
        assert redis_pids(directory) == []
        assert not answers(socket_path_for(directory))
        assert any(p.name.startswith("appendonly") for p in directory.iterdir())

        console.seek(0)
        console.truncate()
        again = invoke("demo", "--users", "50", "--data-dir", str(data_dir))
        assert again.exit_code == 1
        assert "The store already has users: nothing loaded." in console.getvalue()
        assert redis_pids(directory) == []
    finally:
        for pid in redis_pids(directory):  # only servers this test started, for its own directory
            os.kill(pid, signal.SIGKILL)


def test_verify_then_repair(target: Target, console: io.StringIO) -> None:
    assert invoke("demo", "--users", "60", *target.options()).exit_code == 0
    assert invoke("verify", *target.options()).exit_code == 0
    assert "The graph is consistent." in console.getvalue()
    follower, followee = next(
        (user_id, member) for user_id in map(str, range(1, 61)) for member in target.following(user_id)
    )
    target.db.zrem(KEYS.fans(followee), follower)  # as a crash between the two steps would leave it
    console.seek(0)
    console.truncate()

    found = invoke("verify", *target.options())
    assert found.exit_code == 1
    assert "1 x fan entry missing" in console.getvalue()
    assert f"fan entry missing: {follower} follows {followee}" in console.getvalue()

    assert invoke("repair", *target.options()).exit_code == 0
    assert "Repaired" in console.getvalue()
    assert target.db.zscore(KEYS.fans(followee), follower) == target.following(follower)[followee]
    assert invoke("verify", *target.options()).exit_code == 0


# -- cluster ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("replicas", [0, 1])
def test_cluster_runs_a_local_cluster_until_terminated(tmp_path: Path, replicas: int) -> None:
    nodes = 2 * (1 + replicas)
    base = next(
        p
        for p in free_cluster_ports(20)
        if all(port_is_free(q) and port_is_free(q + 10000) for q in range(p, p + nodes))
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "followgraph.cli",
            "cluster",
            "--masters",
            "2",
            "--replicas",
            str(replicas),
            "--port",
            str(base),
            "--data-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            k: v
            for k, v in os.environ.items()
            if not k.startswith("FOLLOWGRAPH_") or k == "FOLLOWGRAPH_REDIS_SERVER"
        },
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().decode().strip()
        assert url == "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in range(base, base + nodes))
        client = redis.RedisCluster(host="127.0.0.1", port=base, decode_responses=True)
        try:
            for i in range(20):
                client.set(f"{{u:{i}}}k", i)
            assert client.dbsize(target_nodes=redis.RedisCluster.PRIMARIES) == 20
            flags = [str(node["flags"]) for node in client.cluster_nodes().values()]
            assert sum("slave" in f for f in flags) == 2 * replicas, flags
        finally:
            client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert "ready" in err.decode()
    assert process.returncode == 128 + signal.SIGTERM
    assert not answers(socket_path_for(tmp_path / "cluster" / "node-0"))


# -- papercuts a newcomer meets ------------------------------------------------------------------


def test_serve_help_names_every_variable_and_default() -> None:
    result = CliRunner().invoke(cli.app, ["serve", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "…" not in result.stdout
    text = " ".join(result.stdout.split())
    for option, variable, default in [
        ("--host", "FOLLOWGRAPH_HOST", "127.0.0.1"),
        ("--port", "FOLLOWGRAPH_PORT", "8000"),
        ("--workers", "FOLLOWGRAPH_WORKERS", "1"),
        ("--redis-url", "FOLLOWGRAPH_REDIS_URL", "the embedded Redis of the data directory"),
        ("--data-dir", "FOLLOWGRAPH_DATA_DIR", ".followgraph"),
        ("--appendfsync", "FOLLOWGRAPH_APPENDFSYNC", "everysec"),
        ("--production", "FOLLOWGRAPH_PRODUCTION", "development"),
        ("--log-level", "FOLLOWGRAPH_LOG_LEVEL", "info"),
        ("--metrics-port", "FOLLOWGRAPH_METRICS_PORT", "the API's port"),
        ("--federation", "FOLLOWGRAPH_FEDERATION", "off"),
    ]:
        assert option in text
        assert f"[env {variable}; default: {default}]" in text
    assert "default: None" not in text


def test_command_list_is_not_cut_at_80_columns() -> None:
    result = CliRunner().invoke(cli.app, ["--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    commands = result.stdout.split("Commands:")[1]
    assert "..." not in commands
    assert "serve          Serve the API, the web app (/) and GraphiQL (/graphql)." in result.stdout


def test_import_help_is_not_cut_at_80_columns() -> None:
    result = CliRunner().invoke(cli.app, ["import", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.stdout
    text = " ".join(result.stdout.split())
    assert "--kind <edges|users|controls>" in text
    assert (
        "edges (columns follower, followee, followed_at), users (columns userId, name, avatarUrl, "
        "createdAt, locked, hideFollowing, hideFans) or controls (columns kind, actor, target, at; "
        "kind BLOCK, MUTE or REQUEST). Import users, then edges, then controls." in text
    )
    assert "--register-missing / --no-register-missing" in text


def test_export_help_shows_the_controls() -> None:
    result = CliRunner().invoke(cli.app, ["export", "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert "…" not in result.stdout
    text = " ".join(result.stdout.split())
    assert "--kind <edges|users|controls>" in text
    assert "Export every follow, user or control" in text


def test_messages_are_not_wrapped_when_piped(redis_server: RedisServer, tmp_path: Path) -> None:
    redis.Redis(unix_socket_path=str(redis_server.socket_path)).flushall()
    rows = [f"user{i},user{i + 1},{i}" for i in range(1, 1001)] + ["carol,carol,2"]
    source = edges_csv(tmp_path / "edges.csv", rows)
    args = [
        sys.executable,
        "-m",
        "followgraph.cli",
        "import",
        str(source),
        "--redis-url",
        redis_server.url,
    ]
    result = subprocess.run(
        args, capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "80"}
    )
    assert result.returncode == 1, result.stderr
    summary = next(line for line in result.stderr.splitlines() if " rows in " in line)
    assert len(summary) > 80
    assert summary.startswith("1,001 rows in ")
    assert summary.endswith("1,000 follows written, 0 already there, 1 rejected.")


def test_controls_round_trip_with_settings(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    users = tmp_path / "users.csv"
    users.write_text(
        "userId,name,avatarUrl,createdAt,locked,hideFollowing,hideFans\n"
        "alice,Alice,,1,false,true,false\n"
        "bob,,,2,true,,\n"
        "carol,,,3\n"
        "dave,,,4,TRUE,false,true\n"
    )
    assert invoke("import", str(users), "--kind", "users", *target.options()).exit_code == 0, (
        console.getvalue()
    )
    assert target.db.hgetall(KEYS.profile("dave")) == {"createdAt": "4", "locked": "1", "hideFans": "1"}
    assert invoke("import", str(edges_csv(tmp_path / "edges.csv")), *target.options()).exit_code == 0
    controls = tmp_path / "controls.csv"
    controls.write_text(
        "kind,actor,target,at\n"  # 1
        "BLOCK,alice,bob,2024-01-01T00:00:00Z\n"  # 2: ends their follows both ways
        "MUTE,carol,alice,10\n"  # 3
        "REQUEST,carol,bob,11\n"  # 4
        "REQUEST,bob,alice,12\n"  # 5: across the block
        "POKE,alice,carol,13\n"  # 6: unknown kind
        "MUTE,dave,dave,14\n"  # 7: self-mute
        "REQUEST,dave,alice,yesterday\n"  # 8: bad time
        "REQUEST,carol,dave,15\n"  # 9: carol follows dave already
    )
    result = invoke("import", str(controls), "--kind", "controls", *target.options())
    assert result.exit_code == 1, console.getvalue()
    text = console.getvalue()
    assert "8 rows" in text
    assert "3 controls written, 0 already there, 5 rejected." in text
    assert "line 5: one of the two users blocks the other" in text
    assert "line 6: unknown kind 'POKE': use BLOCK, MUTE or REQUEST" in text
    assert "line 7: a user cannot mute themselves" in text
    assert "line 8: bad time 'yesterday'" in text
    assert "line 9: user 'carol' already follows 'dave'" in text
    assert "5 rows were rejected: fix them and run the import again." in text
    assert target.following("alice") == {"carol": 1_700_000_000_200}
    assert target.following("bob") == {}
    assert target.db.zscore(KEYS.blocked_by("bob"), "alice") == 1_704_067_200_000

    out = tmp_path / "controls-out.jsonl"
    exported = invoke("export", str(out), "--kind", "controls", *target.options())
    assert exported.exit_code == 0, console.getvalue()
    assert "Exported 3 controls" in console.getvalue()
    records = sorted((json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["kind"])
    assert records == [
        {"kind": "BLOCK", "actor": "alice", "target": "bob", "at": 1_704_067_200_000},
        {"kind": "MUTE", "actor": "carol", "target": "alice", "at": 10},
        {"kind": "REQUEST", "actor": "carol", "target": "bob", "at": 11},
    ]
    users_out = tmp_path / "users-out.jsonl"
    assert invoke("export", str(users_out), "--kind", "users", *target.options()).exit_code == 0
    settings = {
        r["userId"]: (r["locked"], r["hideFollowing"], r["hideFans"])
        for r in map(json.loads, users_out.read_text().splitlines())
    }
    assert settings == {
        "alice": (False, True, False),
        "bob": (True, False, False),
        "carol": (False, False, False),
        "dave": (True, False, True),
        "erin": (False, False, False),
    }

    console.seek(0)
    console.truncate()
    again = invoke("import", str(out), "--kind", "controls", *target.options())
    assert again.exit_code == 0, console.getvalue()
    assert "0 controls written, 3 already there, 0 rejected." in console.getvalue()


def test_import_progress_counts_data_rows_only(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = edges_csv(tmp_path / "edges.csv")
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 0, console.getvalue()
    assert "6/6 rows" in console.getvalue()
    assert files._count_rows(str(source), Format.CSV, header=True) == 6
    headless = tmp_path / "headless.csv"
    headless.write_text("a,b,1\n\nb,c,2")  # a blank line, no final newline
    assert files._count_rows(str(headless), Format.CSV, header=False) == 2
    jsonl = tmp_path / "edges.jsonl"
    jsonl.write_text('{"follower": "a", "followee": "b"}\n')
    assert files._count_rows(str(jsonl), Format.JSONL, header=True) == 1


def test_token_for_an_unregistered_user_warns(target: Target, console: io.StringIO) -> None:
    target.db.hset(KEYS.profile("alice"), "createdAt", "1")
    known = invoke("token", "alice", *target.options())
    assert known.exit_code == 0, console.getvalue()
    assert console.getvalue() == ""
    unknown = invoke("token", "99999999", *target.options())
    assert unknown.exit_code == 0
    assert principal(unknown.stdout.strip(), target.data_dir) == Principal("99999999", frozenset())
    assert "Warning: no user 99999999 is registered." in console.getvalue()
    console.seek(0)
    console.truncate()
    admin = invoke("token", "admin", "--admin", *target.options())
    assert admin.exit_code == 0
    assert console.getvalue() == ""
