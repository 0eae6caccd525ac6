"""`followgraph accounts status/suspend/unsuspend/delete`: where an account stands, and an operator's
changes of it (store/graph/lifecycle.py), as the admin mutations make them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from followgraph.cli.accounts import accounts
from followgraph.cli.support import (
    DataDir,
    RedisUrl,
    console,
    counted,
    fail,
    redis_for,
    settings_from,
    with_store,
)
from followgraph.store import (
    AccountInactiveError,
    AccountState,
    FollowStore,
    InvalidInputError,
    UserNotFoundError,
    validate_user_id,
)

T = TypeVar("T")
UserId = Annotated[str, typer.Argument(help="Whose account.", show_default=False)]


def _run(
    user_id: str, redis_url: str | None, data_dir: Path | None, work: Callable[[FollowStore], Awaitable[T]]
) -> T:
    try:
        validate_user_id(user_id)
    except InvalidInputError as exc:
        raise fail(str(exc)) from None
    settings = settings_from(redis_url=redis_url, data_dir=data_dir)
    with redis_for(settings) as settings:
        try:
            return asyncio.run(with_store(settings, work))
        except UserNotFoundError:
            raise fail(f"No user {user_id!r} is registered.", 1) from None
        except AccountInactiveError as exc:
            raise fail(str(exc), 1) from None


def status(user_id: UserId, redis_url: RedisUrl = None, data_dir: DataDir = None) -> None:
    """Say where USER_ID's account stands: its state, since when and why, and the progress of a
    change in batches under way (a big account's deactivation, reactivation or deletion)."""

    async def work(store: FollowStore) -> list[str]:
        state = await store.account_state(user_id)
        if state is None:
            raise UserNotFoundError(user_id)
        lines = [f"{user_id}: {state.value}"]
        if state is not AccountState.ACTIVE:
            [account] = await store.accounts([user_id])
            account = account or {}
            if account.get("stateAt"):
                since = datetime.fromtimestamp(int(account["stateAt"]) / 1000, UTC)
                lines.append(f"  since {since:%Y-%m-%d %H:%M:%S} UTC")
            if account.get("stateReason"):
                lines.append(f"  reason: {account['stateReason']}")
        job = await store.job_progress(user_id)
        if job is not None:
            share = f" ({job.done / job.total:.0%})" if job.total else ""
            lines.append(
                f"  {job.kind} under way: {job.done:,} of {counted(job.total, 'user')} visited{share}"
            )
        return lines

    for line in _run(user_id, redis_url, data_dir, work):
        console.print(line, markup=False, highlight=False)


def suspend(
    user_id: UserId,
    reason: Annotated[str, typer.Option(help="Kept with the suspension, shown to admins.")] = "",
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Suspend USER_ID's account, as suspendUser does: it is gone for everyone else at once, its
    follows kept to come back with `unsuspend`."""

    async def work(store: FollowStore) -> AccountState:
        return await store.deactivate(user_id, state=AccountState.SUSPENDED, reason=reason)

    had = _run(user_id, redis_url, data_dir, work)
    console.print(f"Suspended {user_id} (it was {had.value.lower()}).", markup=False, highlight=False)


def unsuspend(user_id: UserId, redis_url: RedisUrl = None, data_dir: DataDir = None) -> None:
    """Lift USER_ID's suspension, as unsuspendUser does: its follows come back."""

    async def work(store: FollowStore) -> None:
        await store.reactivate(user_id, lifting=AccountState.SUSPENDED)

    _run(user_id, redis_url, data_dir, work)
    console.print(f"{user_id} is active again.", markup=False, highlight=False)


def delete(
    user_id: UserId,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask for confirmation.")] = False,
    redis_url: RedisUrl = None,
    data_dir: DataDir = None,
) -> None:
    """Delete USER_ID's account for good, as deleteUser does: its keys, every trace of it in
    other users' lists, and (through the change log) its rows in the SQL copy."""
    if not yes:
        typer.confirm(f"Delete {user_id} for good? This cannot be undone", abort=True)

    async def work(store: FollowStore) -> None:
        await store.delete_account(user_id)

    _run(user_id, redis_url, data_dir, work)
    console.print(f"Deleted {user_id}.", markup=False, highlight=False)


accounts.command(short_help="Where an account stands.")(status)
accounts.command(short_help="Suspend an account (an admin's deactivation).")(suspend)
accounts.command(short_help="Lift a suspension.")(unsuspend)
accounts.command(short_help="Delete an account for good.")(delete)
