"""`followgraph accounts export`: one user's list as the CSV file the user would download."""

from __future__ import annotations

import io
from pathlib import Path

from tests.cli.clis import KEYS, Target, invoke


def test_export_writes_the_users_list_to_a_file_or_stdout(
    target: Target, console: io.StringIO, tmp_path: Path
) -> None:
    for user_id in ("me", "a", "b"):
        target.db.hset(KEYS.profile(user_id), mapping={"name": user_id, "createdAt": "1"})
    target.db.zadd(KEYS.following("me"), {"a": 1, "b": 2})
    out = tmp_path / "following.csv"
    assert invoke("accounts", "export", "me", "-o", str(out), *target.options()).exit_code == 0
    assert out.read_text() == (
        "Account address,Show boosts,Notify on new posts,Languages\nb,true,false,\na,true,false,\n"
    )
    piped = invoke("accounts", "export", "me", "--list", "followers", *target.options())
    assert piped.exit_code == 0
    assert piped.stdout == "Account address\n"


def test_export_refuses_a_malformed_id(target: Target, console: io.StringIO) -> None:
    result = invoke("accounts", "export", "no such id", *target.options())
    assert result.exit_code == 2
    assert "Invalid user id" in console.getvalue()


def test_import_applies_a_file_and_lists_the_rows_it_could_not(
    target: Target, console: io.StringIO, tmp_path: Path
) -> None:
    for user_id in ("me", "a"):
        target.db.hset(KEYS.profile(user_id), mapping={"name": user_id, "createdAt": "1"})
    file = tmp_path / "blocked_accounts.csv"
    file.write_text("a\nnobody\n")
    result = invoke("accounts", "import", "me", str(file), "--list", "blocks", *target.options())
    assert result.exit_code == 1, result.exception
    assert "Applied 1 row, removed 0 entries, could not apply 1 row." in console.getvalue()
    assert "line 2: nobody: no such user" in console.getvalue()
    assert target.db.zscore(KEYS.blocking("me"), "a") is not None


def test_import_refuses_a_file_it_cannot_read(target: Target, console: io.StringIO, tmp_path: Path) -> None:
    result = invoke("accounts", "import", "me", str(tmp_path / "missing.csv"), *target.options())
    assert result.exit_code == 2
    assert "Cannot import" in console.getvalue()
