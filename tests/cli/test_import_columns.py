"""`followgraph import` reads CSV columns by the names its header gives them, in any order, refuses
a header that does not fit before anything is written, and reads a file without one only with
--no-header."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.cli.clis import KEYS, Target, invoke


def written(target: Target) -> list[str]:
    """Every key of the target: none when an import wrote nothing."""
    return sorted(target.db.scan_iter(count=500))


def run(target: Target, path: Path, text: str, *args: str) -> int:
    path.write_text(text)
    return invoke("import", str(path), *args, *target.options()).exit_code


@pytest.mark.parametrize(
    "order",
    [
        ("followee", "follower", "followed_at"),  # once read as every follow backwards
        ("followed_at", "followee", "follower"),
    ],
)
def test_edges_with_shuffled_columns(
    target: Target, tmp_path: Path, console: io.StringIO, order: tuple[str, str, str]
) -> None:
    rows = [
        {"follower": "alice", "followee": "bob", "followed_at": "1700000000000"},
        {"follower": "bob", "followee": "carol", "followed_at": ""},
        {"follower": "carol", "followee": "alice", "followed_at": "5"},
    ]
    text = "".join(",".join(row) + "\n" for row in [order, *([r[name] for name in order] for r in rows)])
    assert run(target, tmp_path / "edges.csv", text) == 0, console.getvalue()
    assert target.following("alice") == {"bob": 1_700_000_000_000}
    assert set(target.following("bob")) == {"carol"}  # no time: now
    assert target.following("carol") == {"alice": 5}
    assert target.profiles() == 3


def test_users_with_shuffled_columns(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    text = (
        "hideFans,avatarUrl,userId,locked,createdAt,name,hideFollowing\n"
        "true,https://img.example/a.png,alice,false,5,Alice,true\n"
        ",,bob,true,6,,\n"
    )
    assert run(target, tmp_path / "users.csv", text, "--kind", "users") == 0, console.getvalue()
    assert target.db.hgetall(KEYS.profile("alice")) == {
        "name": "Alice",
        "avatarUrl": "https://img.example/a.png",
        "createdAt": "5",
        "hideFollowing": "1",
        "hideFans": "1",
    }
    assert target.db.hgetall(KEYS.profile("bob")) == {"createdAt": "6", "locked": "1"}
    assert target.profiles() == 2


def test_controls_with_shuffled_columns(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    text = "target,at,actor,kind\nbob,100,alice,BLOCK\nalice,200,carol,MUTE\ncarol,300,bob,REQUEST\n"
    assert run(target, tmp_path / "controls.csv", text, "--kind", "controls") == 0, console.getvalue()
    assert target.db.zscore(KEYS.blocking("alice"), "bob") == 100
    assert target.db.zscore(KEYS.muting("carol"), "alice") == 200
    assert target.db.zscore(KEYS.requests_out("bob"), "carol") == 300
    assert target.profiles() == 3


def test_a_file_without_a_header_is_refused_before_anything_is_written(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    path = tmp_path / "edges.csv"
    result = run(target, path, "a,b\n1,2\n")
    assert result == 2
    assert console.getvalue().strip() == (
        f"Cannot import {path}: its first line, 'a,b', names none of the columns of edges (follower "
        "and followee, and optionally followed_at): start the file with a header naming them, in any "
        "order, or pass --no-header if its rows hold follower,followee,followed_at in that order."
    )
    assert written(target) == []


def test_a_users_header_with_an_unknown_column_is_refused(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    path = tmp_path / "users.csv"
    assert run(target, path, "id,name\nalice,Alice\n", "--kind", "users") == 2
    assert console.getvalue().strip() == (
        f"Cannot import {path}: its header names an unknown column 'id' and lacks userId; the "
        "columns of users are userId, and optionally name, avatarUrl, createdAt, locked, "
        "hideFollowing and hideFans, in any order."
    )
    assert written(target) == []


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("follower,followee,when", "names an unknown column 'when'"),
        ("follower,followee,followedAt,note", "names unknown columns 'followedAt' and 'note'"),
        ("follower,followed_at", "lacks followee"),
        ("followed_at,follower,followee,follower", "names follower more than once"),
        ("follower,followee,", "names an unknown column ''"),
    ],
)
def test_an_edges_header_that_does_not_fit_is_refused(
    target: Target, tmp_path: Path, console: io.StringIO, header: str, problem: str
) -> None:
    path = tmp_path / "edges.csv"
    assert run(target, path, f"{header}\nalice,bob,1\n") == 2
    assert console.getvalue().strip() == (
        f"Cannot import {path}: its header {problem}; the columns of edges are follower and "
        "followee, and optionally followed_at, in any order."
    )
    assert written(target) == []


def test_a_controls_header_that_does_not_fit_is_refused(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    path = tmp_path / "controls.csv"
    assert run(target, path, "kind,actor,at\nBLOCK,alice,1\n", "--kind", "controls") == 2
    assert "its header lacks target; the columns of controls are kind, actor and target, and " in (
        console.getvalue()
    )
    assert written(target) == []


def test_standard_input_without_a_header_is_refused(target: Target, console: io.StringIO) -> None:
    result = invoke("import", "-", *target.options(), input="alice,bob,1\n")
    assert result.exit_code == 2
    assert console.getvalue().startswith(
        "Cannot import standard input: its first line, 'alice,bob,1', names none of the columns of edges"
    )
    assert written(target) == []


def test_no_header_reads_the_columns_in_their_documented_order(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    assert run(target, tmp_path / "edges.csv", "alice,bob,1\n\nbob,carol\n", "--no-header") == 0, (
        console.getvalue()
    )
    assert target.following("alice") == {"bob": 1}
    assert set(target.following("bob")) == {"carol"}
    assert "2 rows in " in console.getvalue()
    assert "2/2 rows" in console.getvalue()

    users = "dave,Dave,,7,true\n"
    assert run(target, tmp_path / "users.csv", users, "--kind", "users", "--no-header") == 0
    assert target.db.hgetall(KEYS.profile("dave")) == {"name": "Dave", "createdAt": "7", "locked": "1"}

    controls = "MUTE,alice,dave,9\n"
    assert run(target, tmp_path / "controls.csv", controls, "--kind", "controls", "--no-header") == 0
    assert target.db.zscore(KEYS.muting("alice"), "dave") == 9


def test_no_header_refuses_a_file_that_has_one(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    path = tmp_path / "users.csv"
    assert run(target, path, "userId,name\nalice,Alice\n", "--kind", "users", "--no-header") == 2
    assert console.getvalue().strip() == (
        f"Cannot import {path}: its first line, 'userId,name', is a header, but --no-header says it "
        "has none: drop --no-header."
    )
    assert written(target) == []


def test_a_row_with_more_values_than_the_header_has_columns_is_rejected(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    # An unquoted comma in a name would otherwise move every later value into the wrong column.
    text = "userId,name,createdAt\nalice,Alice,5\nbob,Bob, Jr.,6\n"
    assert run(target, tmp_path / "users.csv", text, "--kind", "users") == 1
    assert "  line 3: 4 values for 3 columns (userId,name,createdAt)" in console.getvalue()
    assert target.profiles() == 1


def test_json_lines_with_unknown_or_missing_keys_are_rejected_by_line(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    records = [
        {"follower": "alice", "followee": "bob", "followed_at": 1},
        {"follower": "alice", "followee": "carol", "followedAt": 2},
        {"followee": "bob", "followed_at": 3},
        {"follower": "bob", "followee": "alice", "when": 4, "why": "x"},
    ]
    path = tmp_path / "edges.jsonl"
    assert run(target, path, "".join(json.dumps(r) + "\n" for r in records)) == 1
    text = console.getvalue()
    assert "  line 2: unknown key 'followedAt' (the keys of edges are follower and followee, and " in text
    assert "  line 3: no follower (an object needs follower and followee)" in text
    assert "  line 4: unknown keys 'when' and 'why' (the keys of edges are " in text
    assert target.following("alice") == {"bob": 1}
    assert target.following("bob") == {}


def test_help_says_how_columns_are_read() -> None:
    result = invoke("import", "--help", env={"COLUMNS": "80"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "--header / --no-header" in text
    assert "names the columns, in any order" in text
