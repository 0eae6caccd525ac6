"""Finding users: by application id, by global id, in batches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from resolvers.context import Context
from resolvers.errors import bad_user_input
from resolvers.node import from_global_id
from store import Counts, InvalidInputError, Profile, Relation, validate_user_id
from store.model import NO_RELATION

MAX_IDS = 100


@dataclass(frozen=True, slots=True)
class Facts:
    """What is known of a user for one response: only the parts its selected fields need."""

    user_id: str
    profile: Profile | None = None
    relation: Relation = NO_RELATION
    counts: Counts | None = None


async def facts(
    context: Context, user_ids: Sequence[str], *, profile: bool, relation: bool, counts: bool
) -> list[Facts]:
    """Load the parts asked for, batched with the request's other loads of the same depth."""
    loaders = context.loaders
    wanted: list[Awaitable[list[Any]]] = []
    if profile:
        wanted.append(loaders.profile.load_group(user_ids))
    if relation:
        wanted.append(loaders.relation.load_group(user_ids))
    if counts:
        wanted.append(loaders.counts.load_group(user_ids))
    loaded = iter(await asyncio.gather(*wanted))
    profiles = next(loaded) if profile else [None] * len(user_ids)
    relations = next(loaded) if relation else [NO_RELATION] * len(user_ids)
    all_counts = next(loaded) if counts else [None] * len(user_ids)
    return [
        Facts(user_id, p, r, c)
        for user_id, p, r, c in zip(user_ids, profiles, relations, all_counts, strict=True)
    ]


def checked_user_id(user_id: str, *, argument: str = "userId") -> str:
    """A well-formed user id, or a BAD_USER_INPUT error naming the argument."""
    try:
        return validate_user_id(user_id, field=argument)
    except InvalidInputError as exc:
        raise bad_user_input(str(exc), argument=argument) from None


async def registered_user(context: Context, user_id: str) -> str | None:
    """`user_id` when that user is registered, else None."""
    checked = checked_user_id(user_id)
    return checked if await context.loaders.profile.load(checked) is not None else None


async def registered_users(
    context: Context, user_ids: Sequence[str], *, argument: str = "userIds"
) -> list[str | None]:
    if len(user_ids) > MAX_IDS:
        raise bad_user_input(f"At most {MAX_IDS} ids per call, got {len(user_ids)}.", argument=argument)
    checked = [checked_user_id(user_id, argument=argument) for user_id in user_ids]
    profiles = await context.loaders.profile.load_many(checked)
    return [
        user_id if profile is not None else None for user_id, profile in zip(checked, profiles, strict=True)
    ]


async def nodes(context: Context, global_ids: Sequence[str]) -> list[str | None]:
    """The user id behind each global id, None where that user is not registered."""
    if len(global_ids) > MAX_IDS:
        raise bad_user_input(f"At most {MAX_IDS} ids per call, got {len(global_ids)}.", argument="ids")
    local = [from_global_id(global_id)[1] for global_id in global_ids]
    return await registered_users(context, local, argument="ids")
