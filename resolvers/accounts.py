"""What the account mutations do: deactivate, reactivate, delete (the viewer's own account) and
suspend, unsuspend, delete (an admin's, of any account). Expected failures come back as data."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import forbidden
from followgraph.resolvers.mutations import Failure, require_viewer
from followgraph.resolvers.users import checked_user_id
from followgraph.store import AccountInactiveError, AccountState, UserNotFoundError

log = logging.getLogger(__name__)
# A change in batches (a big account) is waited for this share of what is left of the request's
# time at most; then the answer says where the account stands and the change goes on.
WAIT_SHARE = 0.5
# The changes that run on after their request answered: held here so that none is collected.
_RUNNING: set[asyncio.Task[Any]] = set()


@dataclass(frozen=True, slots=True)
class AccountOutcome:
    user_id: str
    # None once the account is deleted for good.
    state: AccountState | None
    failures: list[Failure] = field(default_factory=list)


async def _finish(context: Context, work: Coroutine[Any, Any, Any], what: str, user_id: str) -> bool:
    """Run `work` to its end whatever happens to the request; whether it ended within the wait."""
    task = asyncio.ensure_future(work)
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    waiting: Awaitable[Any] = asyncio.shield(task)
    if context.deadline is None:
        await waiting
        return True
    loop = asyncio.get_running_loop()
    now = loop.time()
    try:
        async with asyncio.timeout_at(now + max(0.0, context.deadline - now) * WAIT_SHARE):
            await waiting
    except TimeoutError:
        log.info("%s %s: answering while its follows are still being moved.", what, user_id)
        return False
    return True


async def _state(context: Context, user_id: str) -> AccountState | None:
    return await context.store.account_state(user_id)


def _inactive(exc: AccountInactiveError) -> Failure:
    return Failure("ACCOUNT_INACTIVE", str(exc))


def _not_found(exc: UserNotFoundError, own: bool) -> Failure:
    """The failure of a call on an account that does not exist: the viewer's own (no input field),
    or the one an admin named."""
    return Failure(exc.code, str(exc), None if own else ["input", "userId"])


async def switch_off(
    context: Context, user_id: str, state: AccountState, reason: str = "", *, own: bool = True
) -> AccountOutcome:
    store = context.store
    try:
        await _finish(
            context, store.deactivate(user_id, state=state, reason=reason), "Switching off", user_id
        )
    except UserNotFoundError as exc:
        return AccountOutcome(user_id, None, [_not_found(exc, own)])
    finally:
        context.loaders.clear_all()
    now = await _state(context, user_id)
    failures = []
    if now is not state and now is not None:
        failures.append(Failure("ACCOUNT_INACTIVE", f"The account {user_id!r} is {now.value.lower()}."))
    return AccountOutcome(user_id, now, failures)


async def switch_on(
    context: Context, user_id: str, lifting: AccountState, *, own: bool = True
) -> AccountOutcome:
    try:
        await _finish(context, context.store.reactivate(user_id, lifting=lifting), "Reactivating", user_id)
    except UserNotFoundError as exc:
        return AccountOutcome(user_id, None, [_not_found(exc, own)])
    except AccountInactiveError as exc:
        return AccountOutcome(user_id, AccountState(exc.state), [_inactive(exc)])
    finally:
        context.loaders.clear_all()
    return AccountOutcome(user_id, await _state(context, user_id))


async def delete(context: Context, user_id: str, *, own: bool = True) -> AccountOutcome:
    try:
        done = await _finish(context, context.store.delete_account(user_id), "Deleting", user_id)
    except UserNotFoundError as exc:
        return AccountOutcome(user_id, None, [_not_found(exc, own)])
    finally:
        context.loaders.clear_all()
    return AccountOutcome(user_id, None if done else AccountState.DELETING)


async def deactivate_account(context: Context) -> AccountOutcome:
    return await switch_off(context, require_viewer(context), AccountState.DEACTIVATED)


async def reactivate_account(context: Context) -> AccountOutcome:
    return await switch_on(context, require_viewer(context), AccountState.DEACTIVATED)


async def delete_account(context: Context) -> AccountOutcome:
    return await delete(context, require_viewer(context))


def _admin_target(context: Context, user_id: str, mutation: str) -> str:
    require_viewer(context)
    if not context.is_admin:
        raise forbidden(f"{mutation} needs a token with the 'admin' scope.")
    return checked_user_id(user_id)


async def suspend_user(context: Context, user_id: str, reason: str | None) -> AccountOutcome:
    target = _admin_target(context, user_id, "suspendUser")
    return await switch_off(context, target, AccountState.SUSPENDED, reason or "", own=False)


async def unsuspend_user(context: Context, user_id: str) -> AccountOutcome:
    target = _admin_target(context, user_id, "unsuspendUser")
    return await switch_on(context, target, AccountState.SUSPENDED, own=False)


async def delete_user(context: Context, user_id: str) -> AccountOutcome:
    return await delete(context, _admin_target(context, user_id, "deleteUser"), own=False)
