"""The root Mutation type, its inputs and payloads."""

import asyncio
from typing import TypeAlias

import strawberry

from followgraph.resolvers import accounts, mutations
from followgraph.resolvers.context import Context
from followgraph.resolvers.mutations import FollowOutcome
from followgraph.schema.accounts import AccountPayload, DeleteUserInput, SuspendUserInput, UnsuspendUserInput
from followgraph.schema.enums import Relationship
from followgraph.schema.scalars import EpochMillis
from followgraph.schema.selection import selected
from followgraph.schema.settings import UserSettings
from followgraph.schema.user import USER, User, load_facts, users_at
from followgraph.schema.user_error import UserError
from followgraph.store import Parts, UserFacts

Info: TypeAlias = strawberry.Info[Context, None]


@strawberry.input(description="Whom to follow.")
class FollowInput:
    user_id: strawberry.ID


@strawberry.input(description="Whom to follow, in order.")
class FollowManyInput:
    user_ids: list[strawberry.ID] = strawberry.field(
        description=f"At most {mutations.MAX_FOLLOW_MANY} ids (TOO_MANY past it)."
    )


@strawberry.input(description="Whom to unfollow.")
class UnfollowInput:
    user_id: strawberry.ID


@strawberry.input(description="Which fan to remove.")
class RemoveFanInput:
    user_id: strawberry.ID


@strawberry.input(description="Whom to block.")
class BlockInput:
    user_id: strawberry.ID


@strawberry.input(description="Whom to unblock.")
class UnblockInput:
    user_id: strawberry.ID


@strawberry.input(description="Whom to mute.")
class MuteInput:
    user_id: strawberry.ID


@strawberry.input(description="Whom to unmute.")
class UnmuteInput:
    user_id: strawberry.ID


@strawberry.input(description="Whose follow request to accept.")
class AcceptFollowRequestInput:
    user_id: strawberry.ID


@strawberry.input(description="Whose follow request to reject.")
class RejectFollowRequestInput:
    user_id: strawberry.ID


@strawberry.input(description="Only the settings given are changed.")
class UpdateSettingsInput:
    locked: bool | None = None
    hide_following: bool | None = None
    hide_fans: bool | None = None


@strawberry.input(description="A user to register, or the profile fields to change (omitted fields stay).")
class UpsertUserInput:
    user_id: strawberry.ID
    name: str | None = strawberry.field(default=None, description="1 to 64 characters, not blank.")
    avatar_url: str | None = strawberry.field(default=None, description="An absolute http(s) URL.")


@strawberry.type(description="Every mutation between the viewer and another user answers with this payload.")
class FollowPayload:
    changed: bool = strawberry.field(
        description="False when the call changed nothing (already following / not following): "
        "follow and unfollow are idempotent."
    )
    relationship: Relationship | None = strawberry.field(
        description="The viewer's relationship to the user after the call; null on error."
    )
    pending: bool = strawberry.field(
        description="True when a follow became a follow request that waits for the user's answer (a locked "
        "account); relationship is then unchanged and user.viewerRequestedFollow is true."
    )
    user: User | None = strawberry.field(description="The other user, counts as of after the call.")
    viewer: User | None = strawberry.field(description="The viewer, counts as of after the call.")
    errors: list[UserError]

    @classmethod
    def of(cls, outcome: FollowOutcome, other: UserFacts | None, viewer: UserFacts) -> "FollowPayload":
        """The payload from the users' facts read with the write."""
        return cls(
            changed=outcome.changed,
            relationship=None if outcome.relationship is None else Relationship.of(outcome.relationship),
            pending=outcome.pending,
            user=None if other is None else User.of(other),
            viewer=User.of(viewer),
            errors=[UserError.of(p) for p in outcome.failures],
        )

    @classmethod
    async def load(cls, info: Info, outcome: FollowOutcome) -> "FollowPayload":
        """The payload, with the users' selected fields loaded after the write."""
        other_ids = [] if outcome.other_id is None else [outcome.other_id]
        # Loaded together: one batch of the request's facts loader.
        others, (viewer,) = await asyncio.gather(
            users_at(info, other_ids, "user"), users_at(info, [outcome.viewer_id], "viewer")
        )
        return cls(
            changed=outcome.changed,
            relationship=None if outcome.relationship is None else Relationship.of(outcome.relationship),
            pending=outcome.pending,
            user=others[0] if others else None,
            viewer=viewer,
            errors=[UserError.of(p) for p in outcome.failures],
        )


@strawberry.type(description="The result of followMany.")
class FollowManyPayload:
    results: list[FollowPayload] = strawberry.field(description="One per id of the input, in its order.")
    viewer: User | None = strawberry.field(description="The viewer, counts as of after the call.")
    errors: list[UserError] = strawberry.field(
        description="Errors of the call as a whole (TOO_MANY, RATE_LIMITED before any follow); "
        "per-id errors are in results."
    )

    @classmethod
    async def load(cls, info: Info, many: mutations.ManyOutcome) -> "FollowManyPayload":
        """The payload, with the users' selected fields loaded after the writes: the followed
        users together, the viewer once."""
        other_ids = list(dict.fromkeys(o.other_id for o in many.outcomes if o.other_id is not None))
        other_needs = USER.needs(selected(info, "results", "user"))
        viewer_needs = USER.needs(selected(info, "viewer") | selected(info, "results", "viewer"))
        others, (viewer,) = await asyncio.gather(
            load_facts(info, other_ids, other_needs), load_facts(info, [many.viewer_id], viewer_needs)
        )
        users = {facts.user_id: facts for facts in others}
        results = [
            FollowPayload.of(o, None if o.other_id is None else users[o.other_id], viewer)
            for o in many.outcomes
        ]
        return cls(results=results, viewer=User.of(viewer), errors=[UserError.of(f) for f in many.failures])


def payload_parts(info: Info) -> Parts:
    """What the payload's `user` and `viewer` selections need loaded (read with the write)."""
    return USER.needs(selected(info, "user")) | USER.needs(selected(info, "viewer"))


@strawberry.type(description="The result of markFansSeen.")
class MarkFansSeenPayload:
    seen_at: EpochMillis = strawberry.field(
        description="When the mark was set; newFansCount counts fans who followed after it."
    )
    viewer: User


@strawberry.type(description="The result of updateSettings.")
class UpdateSettingsPayload:
    settings: UserSettings | None
    viewer: User | None
    errors: list[UserError]


@strawberry.type(description="The result of upsertUser.")
class UpsertUserPayload:
    user: User | None
    errors: list[UserError]


@strawberry.type(description="Writes. Each needs a bearer token; upsertUser needs the admin scope.")
class Mutation:
    @strawberry.mutation(description="The viewer follows userId. Requires a token.")
    async def follow(self, info: Info, input: FollowInput) -> FollowPayload:
        parts = payload_parts(info)
        return FollowPayload.of(*await mutations.follow_reading(info.context, input.user_id, parts))

    @strawberry.mutation(
        description="The viewer follows each of userIds (at most 100), in order: one result per id, "
        "as follow would give it (a locked account gets a request). Each counts against the follow "
        "rate limit. Requires a token."
    )
    async def follow_many(self, info: Info, input: FollowManyInput) -> FollowManyPayload:
        return await FollowManyPayload.load(
            info, await mutations.follow_many(info.context, list(input.user_ids))
        )

    @strawberry.mutation(description="The viewer unfollows userId. Requires a token.")
    async def unfollow(self, info: Info, input: UnfollowInput) -> FollowPayload:
        parts = payload_parts(info)
        return FollowPayload.of(*await mutations.unfollow_reading(info.context, input.user_id, parts))

    @strawberry.mutation(
        description="Makes userId stop following the viewer (Mastodon's remove_from_followers). "
        "Requires a token."
    )
    async def remove_fan(self, info: Info, input: RemoveFanInput) -> FollowPayload:
        return await FollowPayload.load(info, await mutations.remove_fan(info.context, input.user_id))

    @strawberry.mutation(
        description="The viewer blocks userId: both follows between them and any follow requests end, and "
        "neither can follow the other until the block is lifted (BLOCKED). Idempotent. Requires a token."
    )
    async def block(self, info: Info, input: BlockInput) -> FollowPayload:
        return await FollowPayload.load(info, await mutations.block(info.context, input.user_id))

    @strawberry.mutation(
        description="Lifts the viewer's block of userId; follows ended by the block stay ended. "
        "Requires a token."
    )
    async def unblock(self, info: Info, input: UnblockInput) -> FollowPayload:
        return await FollowPayload.load(info, await mutations.unblock(info.context, input.user_id))

    @strawberry.mutation(description="The viewer mutes userId (no change to the graph). Requires a token.")
    async def mute(self, info: Info, input: MuteInput) -> FollowPayload:
        return await FollowPayload.load(info, await mutations.mute(info.context, input.user_id))

    @strawberry.mutation(description="The viewer unmutes userId. Requires a token.")
    async def unmute(self, info: Info, input: UnmuteInput) -> FollowPayload:
        return await FollowPayload.load(info, await mutations.unmute(info.context, input.user_id))

    @strawberry.mutation(
        description="userId's pending follow request to the viewer becomes a follow (followedAt = now). "
        "Idempotent. Requires a token."
    )
    async def accept_follow_request(self, info: Info, input: AcceptFollowRequestInput) -> FollowPayload:
        outcome = await mutations.accept_follow_request(info.context, input.user_id)
        return await FollowPayload.load(info, outcome)

    @strawberry.mutation(
        description="userId's pending follow request to the viewer is dropped. Idempotent. Requires a token."
    )
    async def reject_follow_request(self, info: Info, input: RejectFollowRequestInput) -> FollowPayload:
        outcome = await mutations.reject_follow_request(info.context, input.user_id)
        return await FollowPayload.load(info, outcome)

    @strawberry.mutation(
        description="Changes the viewer's settings. Unlocking accepts every pending request; when "
        "that takes more than half the request's time, it answers then and the acceptance goes on "
        "(followRequestCount says how many are left). Requires a token."
    )
    async def update_settings(self, info: Info, input: UpdateSettingsInput) -> UpdateSettingsPayload:
        viewer_id, settings, failures = await mutations.update_settings(
            info.context, locked=input.locked, hide_following=input.hide_following, hide_fans=input.hide_fans
        )
        viewer = None
        if settings is not None:
            (viewer,) = await users_at(info, [viewer_id], "viewer")
        return UpdateSettingsPayload(
            settings=None if settings is None else UserSettings.of(settings),
            viewer=viewer,
            errors=[UserError.of(f) for f in failures],
        )

    @strawberry.mutation(description="Resets the viewer's newFansCount to zero. Requires a token.")
    async def mark_fans_seen(self, info: Info) -> MarkFansSeenPayload:
        viewer_id, seen_at = await mutations.mark_fans_seen(info.context)
        (viewer,) = await users_at(info, [viewer_id], "viewer")
        return MarkFansSeenPayload(seen_at=EpochMillis(seen_at), viewer=viewer)

    @strawberry.mutation(
        description="Switches the viewer's account off: it leaves every other user's lists and counts "
        "at once, and its own follows, fans, requests, blocks and mutes are kept to be restored. "
        "Requires a token."
    )
    async def deactivate_account(self, info: Info) -> AccountPayload:
        return await AccountPayload.load(info, await accounts.deactivate_account(info.context))

    @strawberry.mutation(
        description="Switches the viewer's deactivated account back on: every kept edge comes back with "
        "its original followedAt, except those a block, a deletion or an unfollow ended meanwhile. "
        "Requires a token of the deactivated user (a deactivated user can still authenticate for "
        "this and for deleteAccount)."
    )
    async def reactivate_account(self, info: Info) -> AccountPayload:
        return await AccountPayload.load(info, await accounts.reactivate_account(info.context))

    @strawberry.mutation(
        description="Deletes the viewer's account for good: profile, settings, follows both ways, "
        "requests, blocks, mutes, and its rows in the SQL copy. Answers at once; a big account's "
        "edges are removed in the background (accountState DELETING until done), and the account "
        "is gone for everyone else meanwhile. Requires a token."
    )
    async def delete_account(self, info: Info) -> AccountPayload:
        return await AccountPayload.load(info, await accounts.delete_account(info.context))

    @strawberry.mutation(
        description="As deactivateAccount, for userId, and only an admin lifts it. Requires the admin scope."
    )
    async def suspend_user(self, info: Info, input: SuspendUserInput) -> AccountPayload:
        outcome = await accounts.suspend_user(info.context, input.user_id, input.reason)
        return await AccountPayload.load(info, outcome)

    @strawberry.mutation(description="Lifts a suspension. Requires the admin scope.")
    async def unsuspend_user(self, info: Info, input: UnsuspendUserInput) -> AccountPayload:
        return await AccountPayload.load(info, await accounts.unsuspend_user(info.context, input.user_id))

    @strawberry.mutation(description="As deleteAccount, for userId. Requires the admin scope.")
    async def delete_user(self, info: Info, input: DeleteUserInput) -> AccountPayload:
        return await AccountPayload.load(info, await accounts.delete_user(info.context, input.user_id))

    @strawberry.mutation(
        description="Registers a user or updates the profile. Requires a token with the admin scope."
    )
    async def upsert_user(self, info: Info, input: UpsertUserInput) -> UpsertUserPayload:
        outcome = await mutations.upsert_user(
            info.context, input.user_id, name=input.name, avatar_url=input.avatar_url
        )
        found = [] if outcome.profile is None else await users_at(info, [outcome.profile.user_id], "user")
        return UpsertUserPayload(
            user=found[0] if found else None, errors=[UserError.of(p) for p in outcome.failures]
        )
