"""What viewerEvents pushes to a viewer, and what it says of a bad `after`."""

from __future__ import annotations

import pytest

from followgraph.resolvers.errors import ApiError
from followgraph.resolvers.events import Muting, checked_after
from followgraph.schema.events import RelationEventKind
from followgraph.store.graph.events import Event, EventKind


def event(kind: EventKind, actor: str, target: str) -> Event:
    return Event("1-0", kind, actor, target, 1)


def test_the_viewers_own_events_and_others_relations_to_the_viewer_pass() -> None:
    muting = Muting("bob", set())

    assert muting.passes(event(EventKind.FOLLOW, "alice", "bob"))
    assert muting.passes(event(EventKind.BLOCK, "bob", "alice"))
    assert muting.passes(event(EventKind.ACCEPT_FOLLOW_REQUEST, "alice", "bob"))
    assert not muting.passes(event(EventKind.FOLLOW, "alice", "carol"))


@pytest.mark.parametrize("kind", [EventKind.BLOCK, EventKind.UNBLOCK, EventKind.MUTE, EventKind.UNMUTE])
def test_blocks_and_mutes_of_the_viewer_by_others_never_pass(kind: EventKind) -> None:
    assert not Muting("bob", set()).passes(event(kind, "alice", "bob"))


def test_a_muted_users_events_stop_and_resume_with_the_viewers_own_mute_and_unmute() -> None:
    muting = Muting("bob", {"carol"})

    assert not muting.passes(event(EventKind.FOLLOW, "carol", "bob"))
    assert muting.passes(event(EventKind.UNMUTE, "bob", "carol"))
    assert muting.passes(event(EventKind.FOLLOW, "carol", "bob"))
    assert muting.passes(event(EventKind.MUTE, "bob", "alice"))
    assert not muting.passes(event(EventKind.UNFOLLOW, "alice", "bob"))


@pytest.mark.parametrize(
    "after",
    [
        *("", "yesterday", "12", "12-", "-3", "1-2-3"),
        # Redis refuses these: parts of 2^64 or more, digits of another script, the largest id.
        *("18446744073709551616-0", "1-18446744073709551616", "\u0661-0", "1\u00b2-0"),
        "18446744073709551615-18446744073709551615",
    ],
)
def test_an_after_that_is_not_an_event_id_is_bad_user_input(after: str) -> None:
    with pytest.raises(ApiError) as raised:
        checked_after(after)

    assert raised.value.extensions == {"code": "BAD_USER_INPUT", "argument": "after"}


def test_the_contracts_event_kinds_are_the_logs_relation_kinds() -> None:
    assert [k.value for k in EventKind if k.relation] == [k.value for k in RelationEventKind]
