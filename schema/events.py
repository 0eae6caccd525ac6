"""The Subscription root: the viewer's relation events, live over graphql-transport-ws."""

from collections.abc import AsyncGenerator
from contextlib import aclosing
from enum import Enum
from typing import TypeAlias

import strawberry

from followgraph.resolvers.context import Context
from followgraph.resolvers.events import viewer_events
from followgraph.schema.scalars import EpochMillis
from followgraph.schema.user import User, users_at
from followgraph.store.graph.events import Event

Info: TypeAlias = strawberry.Info[Context, None]


@strawberry.enum
class RelationEventKind(Enum):
    FOLLOW = "FOLLOW"
    UNFOLLOW = "UNFOLLOW"
    REMOVE_FAN = "REMOVE_FAN"
    FOLLOW_REQUEST = "FOLLOW_REQUEST"
    ACCEPT_FOLLOW_REQUEST = "ACCEPT_FOLLOW_REQUEST"
    REJECT_FOLLOW_REQUEST = "REJECT_FOLLOW_REQUEST"
    BLOCK = "BLOCK"
    UNBLOCK = "UNBLOCK"
    MUTE = "MUTE"
    UNMUTE = "UNMUTE"


@strawberry.type(description="One change between two users, as recorded in the event log.")
class RelationEvent:
    event_id: str = strawberry.field(
        description="The event log's id of this change: unique, and increasing for the events of one user."
    )
    kind: RelationEventKind
    at: EpochMillis
    actor_id: strawberry.Private[str]
    target_id: strawberry.Private[str]

    @classmethod
    def of(cls, event: Event) -> "RelationEvent":
        return cls(
            event_id=event.id,
            kind=RelationEventKind[event.kind.value],
            at=EpochMillis(event.at),
            actor_id=event.actor,
            target_id=event.target or "",
        )

    @strawberry.field(
        description="Who acted (for REMOVE_FAN and the answers to requests: "
        "the user who removed or answered)."
    )
    async def actor(self, info: Info) -> User:
        return (await users_at(info, [self.actor_id]))[0]

    @strawberry.field(description="To whom.")
    async def target(self, info: Info) -> User:
        return (await users_at(info, [self.target_id]))[0]


VIEWER_EVENTS = (
    "Changes that concern the viewer, as they happen: the viewer's own (from any device or server\n"
    "process) and other users' follows, unfollows, fan removals, requests and answers that name the\n"
    "viewer. Not pushed: blocks and mutes of the viewer by others, and anything done by a user the\n"
    "viewer mutes. Requires a token (over graphql-transport-ws: in connection_init's payload).\n"
    "With `after` (an eventId), first replays the viewer's events since then, as far as the log holds "
    "them,\nthen goes on live with no gap and no duplicate."
)


@strawberry.type
class Subscription:
    @strawberry.subscription(description=VIEWER_EVENTS)
    async def viewer_events(
        self, info: Info, after: str | None = None
    ) -> AsyncGenerator[RelationEvent, None]:
        context = info.context
        # Closed with this stream: a client that leaves while an event is being sent closes this
        # generator at its yield, and the inner one's subscriber must go then, not at some GC.
        async with aclosing(viewer_events(context, context.hub, after)) as events:
            async for event in events:
                # A subscription lives for hours: each event's users are loaded afresh.
                context.loaders.clear_all()
                yield RelationEvent.of(event)
