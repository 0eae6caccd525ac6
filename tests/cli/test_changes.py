"""The change log and SQL copy commands: `events tail`, `reconcile`, `rebuild --from-sql`, `sync`,
run in-process with CliRunner against the test Redis and the test cluster, with a SQLite copy (the
copy's own suites cover PostgreSQL and MariaDB)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from followgraph.cli.demo import DemoSpec, demo_edges
from tests.cli.clis import Target, invoke

pytestmark = pytest.mark.usefixtures("clean_environment")
USERS = 60


@pytest.fixture
def loaded(target: Target, console: io.StringIO, tmp_path: Path) -> list[str]:
    """The target with a small demo graph; the options that name it and a SQLite copy."""
    result = invoke("demo", "--users", str(USERS), *target.options())
    assert result.exit_code == 0, console.getvalue()
    return [*target.options(), "--database-url", f"sqlite:///{tmp_path / 'copy.db'}"]


def test_events_tail_prints_the_log_as_json_lines(target: Target, loaded: list[str]) -> None:
    result = invoke("events", "tail", "--from", "0", "--no-follow", *target.options())
    assert result.exit_code == 0
    events = [json.loads(line) for line in result.stdout.splitlines()]
    follows = len(list(demo_edges(DemoSpec(users=USERS), now_ms=0)))
    kinds = [e["kind"] for e in events]
    assert kinds.count("USER") == USERS
    assert kinds.count("FOLLOW") + kinds.count("FOLLOW_REQUEST") >= follows // 2
    first = next(e for e in events if e["kind"] == "FOLLOW")
    assert set(first) == {"id", "kind", "actor", "target", "at"}

    later = invoke("events", "tail", "--from", events[-1]["id"], "--no-follow", *target.options())
    assert (later.exit_code, later.stdout) == (0, "")


def test_events_tail_without_following_prints_every_kept_event(target: Target, loaded: list[str]) -> None:
    # --no-follow alone once started at the log's end and so printed nothing, whatever it held.
    whole = invoke("events", "tail", "--from", "0", "--no-follow", *target.options())
    assert whole.exit_code == 0
    assert len(whole.stdout.splitlines()) > USERS
    kept = invoke("events", "tail", "--no-follow", *target.options())
    assert (kept.exit_code, kept.stdout) == (0, whole.stdout)


def test_events_tail_without_following_an_empty_log_prints_nothing(target: Target) -> None:
    result = invoke("events", "tail", "--no-follow", *target.options())
    assert (result.exit_code, result.stdout) == (0, "")


def test_events_tail_help_says_where_it_starts() -> None:
    text = " ".join(invoke("events", "tail", "--help").stdout.split())
    assert "default: only new ones, or with --no-follow every event the log keeps" in text


def test_events_tail_refuses_a_malformed_id(target: Target, console: io.StringIO) -> None:
    result = invoke("events", "tail", "--from", "yesterday", *target.options())
    assert result.exit_code == 2
    assert "--from: 'yesterday' is not an event id (ms-seq)." in console.getvalue()


def test_events_tail_refuses_the_largest_id_which_no_event_follows(
    target: Target, console: io.StringIO
) -> None:
    largest = f"{2**64 - 1}-{2**64 - 1}"
    result = invoke("events", "tail", "--from", largest, "--no-follow", *target.options())
    assert result.exit_code == 2
    assert f"--from: '{largest}' is the largest event id: no event can follow it." in console.getvalue()


def test_reconcile_repair_and_rebuild(
    target: Target, loaded: list[str], console: io.StringIO, tmp_path: Path
) -> None:
    # An empty copy differs from the graph in every user and follow.
    (tmp_path / "copy.db").touch()
    differ = invoke("reconcile", *loaded)
    assert differ.exit_code == 1, console.getvalue()
    assert f"{USERS} users only in Redis" in console.getvalue()
    assert "`followgraph reconcile --repair-sql` rewrites it" in console.getvalue()

    console.truncate(0)
    console.seek(0)
    repaired = invoke("reconcile", "--repair-sql", *loaded)
    assert repaired.exit_code == 0, console.getvalue()
    assert "Rewrote the SQL copy" in console.getvalue()
    assert invoke("reconcile", *loaded).exit_code == 0
    assert "The SQL copy matches Redis." in console.getvalue()

    before = {str(u): target.following(str(u)) for u in range(1, USERS + 1)}
    refused = invoke("rebuild", "--from-sql", *loaded)
    assert refused.exit_code == 1
    assert "The store already has users" in console.getvalue()

    target.db.flushall()
    console.truncate(0)
    console.seek(0)
    rebuilt = invoke("rebuild", "--from-sql", *loaded)
    assert rebuilt.exit_code == 0, console.getvalue()
    assert f"{USERS} users" in console.getvalue()
    assert {str(u): target.following(str(u)) for u in range(1, USERS + 1)} == before
    assert invoke("reconcile", *loaded).exit_code == 0


def test_a_missing_sqlite_copy_is_refused_by_what_reads_it_and_made_by_repair(
    target: Target, loaded: list[str], console: io.StringIO, tmp_path: Path
) -> None:
    missing = tmp_path / "copy.db"
    for command in (["reconcile"], ["rebuild", "--from-sql"]):
        if command[0] == "rebuild":
            target.db.flushall()
        result = invoke(*command, *loaded)
        assert result.exit_code == 1, console.getvalue()
        assert f"{missing} does not exist" in console.getvalue()
        assert not missing.exists()
    invoke("demo", "--users", str(USERS), *target.options())
    assert invoke("reconcile", "--repair-sql", *loaded).exit_code == 0, console.getvalue()
    assert invoke("reconcile", *loaded).exit_code == 0, console.getvalue()


def test_rebuild_needs_to_be_told_where_from(target: Target, console: io.StringIO) -> None:
    result = invoke("rebuild", *target.options())
    assert result.exit_code == 2
    assert "Say where from: `followgraph rebuild --from-sql`." in console.getvalue()


def test_the_copy_can_be_off(target: Target, console: io.StringIO) -> None:
    result = invoke("reconcile", "--database-url", "off", *target.options())
    assert result.exit_code == 2
    assert "The SQL copy is off" in console.getvalue()


def test_help_reads_well() -> None:
    for command in (["sync"], ["events", "tail"], ["rebuild"], ["reconcile"]):
        result = invoke(*command, "--help")
        assert result.exit_code == 0
        assert "FOLLOWGRAPH_DATABASE_URL" in result.stdout or command == ["events", "tail"]


def test_events_lists_tail_without_cutting_it() -> None:
    result = invoke("events", "--help")
    assert result.exit_code == 0
    assert "..." not in result.stdout.split("Commands:")[1]
    assert "tail  Print the change log's events as JSON lines." in result.stdout
