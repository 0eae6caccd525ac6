"""The viewer's relation events: replayed from the log after an id, then live from the process's hub.

Order of steps, so that nothing falls between replay and live and nothing comes twice: register
with the hub first (live events start buffering), replay the log after `after`, then drain the
buffer, skipping the ids the replay already sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import ApiError, bad_user_input, unauthenticated
from followgraph.store.graph.events import Event, EventKind, parse_after
from followgraph.store.log.hub import EventHub, FellBehindError
from followgraph.store.log.stream import EventLog

# The error code of a subscription ended because its buffer overflowed.
FELL_BEHIND = "SUBSCRIPTION_FELL_BEHIND"
# Done to the viewer by someone else, these are never pushed (a block or mute is not announced).
_SILENT_TO_TARGET = frozenset({EventKind.BLOCK, EventKind.UNBLOCK, EventKind.MUTE, EventKind.UNMUTE})


class Muting:
    """Whom the viewer mutes: loaded at subscribe, kept current from the viewer's own events."""

    def __init__(self, viewer: str, muted: set[str]) -> None:
        self.viewer = viewer
        self.muted = muted

    def passes(self, event: Event) -> bool:
        """Whether `event` is pushed to the viewer (and, for the viewer's own mutes, note them)."""
        if not event.kind.relation or self.viewer not in (event.actor, event.target):
            return False
        if event.actor == self.viewer:
            if event.kind is EventKind.MUTE and event.target is not None:
                self.muted.add(event.target)
            elif event.kind is EventKind.UNMUTE:
                self.muted.discard(event.target or "")
            return True
        return event.kind not in _SILENT_TO_TARGET and event.actor not in self.muted


def checked_after(after: str | None) -> str | None:
    if after is None:
        return None
    try:
        parse_after(after)
    except ValueError:
        raise bad_user_input(
            "`after` must be an eventId from viewerEvents (ms-seq, two whole numbers below 2^64, "
            f"e.g. 1764556800000-0), got {after[:48]!r}.",
            argument="after",
        ) from None
    return after


def _stop_if_cancelled() -> None:
    """Raise CancelledError if this task has been asked to stop.

    Python 3.11's asyncio.wait_for, which redis-py puts around each command's send, returns the
    finished call's result when a cancel lands just as the call ends: the task goes on with only
    its cancelling() count keeping the request. A subscription that missed its cancel so waited
    for events forever, holding its socket's slot (#36): it checks before each wait and each yield.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def viewer_events(
    context: Context, hub: EventHub | None, after: str | None
) -> AsyncGenerator[Event, None]:
    """The events pushed to the viewer, replayed after `after` and then live, until cancelled."""
    viewer = context.viewer_id
    if viewer is None or hub is None:
        raise unauthenticated() if viewer is None else RuntimeError("no event hub in this process")
    after = checked_after(after)
    await hub.start()
    subscriber = hub.subscribe(viewer)
    try:
        muting = Muting(viewer, await context.store.muted_by(viewer))
        replayed: set[str] = set()
        if after is not None:
            async with aclosing(EventLog(context.store).tail(after, follow=False)) as replay:
                async for event in replay:
                    _stop_if_cancelled()
                    if muting.passes(event):
                        replayed.add(event.id)
                        yield event
        while True:
            _stop_if_cancelled()
            try:
                event = await subscriber.get()
            except FellBehindError as exc:
                raise ApiError(str(exc), FELL_BEHIND) from None
            if event.id in replayed:
                replayed.discard(event.id)
                continue
            if muting.passes(event):
                yield event
    finally:
        hub.unsubscribe(subscriber)
