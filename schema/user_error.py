"""The user-facing failure every mutation payload carries."""

import strawberry

from followgraph.resolvers.mutations import Failure
from followgraph.schema.enums import UserErrorCode


@strawberry.type(
    description="An expected, user-facing failure of a mutation: returned as data, never as a GraphQL error."
)
class UserError:
    code: UserErrorCode
    message: str
    field: list[str] | None = strawberry.field(description="Path of the input field at fault, when one is.")

    @classmethod
    def of(cls, failure: Failure) -> "UserError":
        return cls(code=UserErrorCode[failure.code], message=failure.message, field=failure.field)
