"""Finding users: by application id, by global id, in batches."""

from __future__ import annotations

from collections.abc import Sequence

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import bad_user_input
from followgraph.resolvers.node import from_global_id
from followgraph.store import InvalidInputError, Parts, UserFacts, validate_user_id

MAX_IDS = 100
NO_PARTS = Parts()
_PROFILE = Parts(profile=True)


async def facts(
    context: Context, user_ids: Sequence[str], parts: Parts, *, batched: bool = True
) -> list[UserFacts]:
    """The `parts` of the users, batched with the request's other loads of the same depth (or, when
    nothing runs beside it, read at once without a DataLoader's scheduling)."""
    if not batched:
        return await context.store.facts(context.viewer_id, user_ids, parts)
    return await context.loaders.facts.load((parts, tuple(user_ids)))


async def registered(
    context: Context, user_ids: Sequence[str | None], parts: Parts = NO_PARTS, *, batched: bool = True
) -> list[UserFacts | None]:
    """Facts of each registered user (with its profile and `parts`), None for unknown or missing ids."""
    present = [user_id for user_id in user_ids if user_id is not None]
    loaded = await facts(context, present, parts | _PROFILE, batched=batched)
    await _accounts_off(context, loaded)
    found = iter(loaded)
    out: list[UserFacts | None] = []
    for user_id in user_ids:
        fact = None if user_id is None else next(found)
        out.append(fact if fact is not None and fact.profile is not None else None)
    return out


def sees_accounts_off(context: Context, user_id: str) -> bool:
    """Whether the viewer sees `user_id`'s account when it is off: its user and admins do."""
    return user_id == context.viewer_id or context.is_admin


async def _accounts_off(context: Context, loaded: list[UserFacts]) -> None:
    """The profiles of the accounts that are off among `loaded`, for the viewer who may see them
    (store/graph/lifecycle.py): one more read, made only when such a user was not found."""
    missing = [f for f in loaded if f.profile is None and sees_accounts_off(context, f.user_id)]
    if not missing:
        return
    profiles = await context.store.account_profiles([f.user_id for f in missing])
    for fact, profile in zip(missing, profiles, strict=True):
        fact.profile = profile


def checked_user_id(user_id: str, *, argument: str = "userId") -> str:
    """A well-formed user id, or a BAD_USER_INPUT error naming the argument."""
    try:
        return validate_user_id(user_id, field=argument)
    except InvalidInputError as exc:
        raise bad_user_input(str(exc), argument=argument) from None


def checked_user_ids(user_ids: Sequence[str], *, argument: str = "userIds") -> list[str]:
    if len(user_ids) > MAX_IDS:
        raise bad_user_input(f"At most {MAX_IDS} ids per call, got {len(user_ids)}.", argument=argument)
    return [checked_user_id(user_id, argument=argument) for user_id in user_ids]


def node_user_ids(global_ids: Sequence[str]) -> list[str]:
    """The user id behind each global id (BAD_USER_INPUT for one that is not ours)."""
    if len(global_ids) > MAX_IDS:
        raise bad_user_input(f"At most {MAX_IDS} ids per call, got {len(global_ids)}.", argument="ids")
    return [from_global_id(global_id)[1] for global_id in global_ids]
