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
