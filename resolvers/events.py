"""The viewer's relation events: replayed from the log after an id, then live from the process's hub.

Order of steps, so that nothing falls between replay and live and nothing comes twice: register
with the hub first (live events start buffering), replay the log after `after`, then drain the
buffer, skipping the ids the replay already sent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing

from followgraph.resolvers.context import Context
from followgraph.resolvers.errors import ApiError, bad_user_input, unauthenticated
from followgraph.store.controls import muted_by
from followgraph.store.events import Event, EventKind, parse_id
from followgraph.store.hub import EventHub, FellBehindError
from followgraph.store.log import EventLog

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
        parse_id(after)
    except ValueError:
        raise bad_user_input(
            "`after` must be an eventId from viewerEvents (ms-seq, e.g. 1764556800000-0), "
            f"got {after[:40]!r}.",
            argument="after",
        ) from None
    return after


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
        muting = Muting(viewer, await muted_by(context.store, viewer))
        replayed: set[str] = set()
        if after is not None:
            async with aclosing(EventLog(context.store).tail(after, follow=False)) as replay:
                async for event in replay:
                    if muting.passes(event):
                        replayed.add(event.id)
                        yield event
        while True:
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
