"""Enums of the API, mapped one to one from the store's."""

from enum import Enum

import strawberry

from followgraph import store


@strawberry.enum(description="How a user relates to the viewer. Anonymous viewers always get NONE.")
class Relationship(Enum):
    SELF = strawberry.enum_value("SELF", description="The user is the viewer.")
    MUTUAL = strawberry.enum_value(
        "MUTUAL", description="The viewer follows the user and the user follows the viewer (互粉)."
    )
    FOLLOWING = strawberry.enum_value(
        "FOLLOWING", description="The viewer follows the user, who does not follow back (关注)."
    )
    FOLLOWED_BY = strawberry.enum_value(
        "FOLLOWED_BY", description="The user follows the viewer, who does not follow back (粉丝)."
    )
    NONE = strawberry.enum_value("NONE", description="Neither follows the other (无关系).")

    # As the store's enum: hashed by identity (looked up per entry of every page).
    __hash__ = object.__hash__

    @classmethod
    def of(cls, relationship: store.Relationship) -> "Relationship":
        return RELATIONSHIPS[relationship]


# The API's value of each of the store's relationships. Enum members' `name` is a descriptor
# call: looked up once here, not once per user of a page; the declared getters index this table
# rather than call `of` (a Python call per user).
RELATIONSHIPS = {member: Relationship[member.name] for member in store.Relationship}


@strawberry.enum(description="Why a mutation could not do what was asked.")
class UserErrorCode(Enum):
    USER_NOT_FOUND = strawberry.enum_value(
        "USER_NOT_FOUND", description="A user named in the input is not registered."
    )
    CANNOT_FOLLOW_SELF = strawberry.enum_value(
        "CANNOT_FOLLOW_SELF", description="Users cannot follow themselves."
    )
    RATE_LIMITED = strawberry.enum_value("RATE_LIMITED", description="Too many follows: retry later.")
    INVALID_INPUT = strawberry.enum_value("INVALID_INPUT", description="An input field is malformed.")
    BLOCKED = strawberry.enum_value("BLOCKED", description="One of the two users blocks the other.")
    ACCOUNT_INACTIVE = strawberry.enum_value(
        "ACCOUNT_INACTIVE",
        description="The account acted on, or the viewer's own, is deactivated, suspended or being deleted.",
    )
    TOO_MANY = strawberry.enum_value(
        "TOO_MANY", description="The call asked for more than its limit (e.g. followMany's 100 ids)."
    )


@strawberry.enum(description="Where an account stands.")
class AccountState(Enum):
    ACTIVE = "ACTIVE"
    DEACTIVATED = strawberry.enum_value(
        "DEACTIVATED",
        description="The user switched the account off; "
        "reactivateAccount switches it back on with its follows.",
    )
    SUSPENDED = strawberry.enum_value(
        "SUSPENDED", description="An admin switched the account off; only an admin switches it back on."
    )
    DELETING = strawberry.enum_value(
        "DELETING",
        description="Being deleted: gone for everyone else already, its edges still being removed.",
    )
