"""The account mutations' inputs and payload (the fields themselves are on schema/mutations.py's
Mutation)."""

from typing import TypeAlias

import strawberry

from followgraph.resolvers import users
from followgraph.resolvers.accounts import AccountOutcome
from followgraph.resolvers.context import Context
from followgraph.schema.enums import AccountState
from followgraph.schema.selection import selected
from followgraph.schema.user import USER, User
from followgraph.schema.user_error import UserError

Info: TypeAlias = strawberry.Info[Context, None]


@strawberry.input(description="Whose account to suspend.")
class SuspendUserInput:
    user_id: strawberry.ID
    reason: str | None = strawberry.field(
        default=None, description="Kept with the suspension, shown to admins."
    )


@strawberry.input(description="Whose suspension to lift.")
class UnsuspendUserInput:
    user_id: strawberry.ID


@strawberry.input(description="Whose account to delete for good.")
class DeleteUserInput:
    user_id: strawberry.ID


@strawberry.type(description="The outcome of a change of an account's state.")
class AccountPayload:
    user: User | None = strawberry.field(
        description="The account as of after the call; null once it is deleted for good."
    )
    state: AccountState | None = strawberry.field(
        description="The account's state after the call "
        "(DELETING while a deletion goes on in the background)."
    )
    errors: list[UserError]

    @classmethod
    async def load(cls, info: Info, outcome: AccountOutcome) -> "AccountPayload":
        user = None
        if outcome.state is not None:
            # The account as its user or an admin sees it (null when it is gone meanwhile).
            needs = USER.needs(selected(info, "user"))
            [facts] = await users.registered(info.context, [outcome.user_id], needs)
            user = None if facts is None else User.of(facts)
        return cls(
            user=user,
            state=None if outcome.state is None else AccountState(outcome.state.value),
            errors=[UserError.of(f) for f in outcome.failures],
        )
