"""`followgraph accounts status/suspend/unsuspend/delete`: an operator's view and changes of one
account, on the real Redis and the real cluster."""

from __future__ import annotations

import io

from tests.cli.clis import KEYS, Target, invoke


def register(target: Target, *user_ids: str) -> None:
    for user_id in user_ids:
        target.db.hset(KEYS.profile(user_id), mapping={"name": user_id, "createdAt": "1"})


def test_suspend_status_unsuspend(target: Target, console: io.StringIO) -> None:
    register(target, "me", "fan")
    target.db.zadd(KEYS.following("fan"), {"me": 5})
    target.db.zadd(KEYS.fans("me"), {"fan": 5})

    result = invoke("accounts", "suspend", "me", "--reason", "spam", *target.options())
    assert result.exit_code == 0, result.exception
    assert "Suspended me (it was active)." in console.getvalue()
    assert target.db.zcard(KEYS.following("fan")) == 0

    assert invoke("accounts", "status", "me", *target.options()).exit_code == 0
    shown = console.getvalue()
    assert "me: SUSPENDED" in shown and "reason: spam" in shown and "since " in shown

    assert invoke("accounts", "unsuspend", "me", *target.options()).exit_code == 0
    assert "me is active again." in console.getvalue()
    assert target.db.zscore(KEYS.following("fan"), "me") == 5


def test_delete_asks_first_and_then_deletes(target: Target, console: io.StringIO) -> None:
    register(target, "me", "fan")
    target.db.zadd(KEYS.following("fan"), {"me": 5})
    target.db.zadd(KEYS.fans("me"), {"fan": 5})

    kept = invoke("accounts", "delete", "me", *target.options(), input="n\n")
    assert kept.exit_code == 1
    assert target.db.exists(KEYS.profile("me"))

    gone = invoke("accounts", "delete", "me", "--yes", *target.options())
    assert gone.exit_code == 0, gone.exception
    assert not target.db.exists(KEYS.profile("me"))
    assert target.db.zcard(KEYS.following("fan")) == 0


def test_unknown_and_malformed_ids(target: Target, console: io.StringIO) -> None:
    assert invoke("accounts", "status", "nobody", *target.options()).exit_code == 1
    assert "No user 'nobody' is registered." in console.getvalue()
    assert invoke("accounts", "unsuspend", "no such id", *target.options()).exit_code == 2
    assert "Invalid user id" in console.getvalue()
