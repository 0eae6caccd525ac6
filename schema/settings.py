"""A user's own settings."""

from __future__ import annotations

import strawberry

from followgraph import store


@strawberry.type(
    description="Who may see what of a user, and whether they approve their fans. "
    "Each setting defaults to false."
)
class UserSettings:
    locked: bool = strawberry.field(
        description="Follows of this user become follow requests that the user accepts or rejects; "
        "the lists are shown only to the user and their fans."
    )
    hide_following: bool = strawberry.field(
        description="The following list (and the mutual and common-following lists, which would reveal it) "
        "is shown to nobody but the user."
    )
    hide_fans: bool = strawberry.field(
        description="The fans list (and fansYouFollow and the mutual list, which would reveal it) is "
        "shown to nobody but the user."
    )

    @classmethod
    def of(cls, settings: store.UserSettings) -> UserSettings:
        return cls(
            locked=settings.locked, hide_following=settings.hide_following, hide_fans=settings.hide_fans
        )
