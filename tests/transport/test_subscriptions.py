"""viewerEvents over graphql-transport-ws, against the app under uvicorn on the real Redis server
and on the real cluster, with the Python `gql` client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from gql.transport.exceptions import TransportQueryError

from followgraph.server.settings import Settings
from followgraph.store.redis.lua import Client
from tests.live import Live, serve_live
from tests.subscriber import listen

FOLLOW = "mutation Follow($id: ID!) { follow(input: {userId: $id}) { changed } }"
UNFOLLOW = "mutation Unfollow($id: ID!) { unfollow(input: {userId: $id}) { changed } }"
MUTE = "mutation Mute($id: ID!) { mute(input: {userId: $id}) { changed } }"
UNMUTE = "mutation Unmute($id: ID!) { unmute(input: {userId: $id}) { changed } }"
BLOCK = "mutation Block($id: ID!) { block(input: {userId: $id}) { changed } }"
ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


@pytest.fixture
async def live(served_redis: Client, settings: Settings) -> AsyncIterator[Live]:
    async with serve_live(settings, served_redis) as served:
        yield served


async def test_a_follow_reaches_both_users_subscriptions(live: Live) -> None:
    await live.register("alice", "bob")
    async with (
        listen(live.ws_url, live.token("bob")) as bob,
        listen(live.ws_url, live.token("alice")) as alice,
    ):
        await live.subscribers(2)
        before = datetime.now(UTC)
        await live.data(FOLLOW, {"id": "bob"}, as_user="alice")

        to_bob, to_alice = await bob.next(), await alice.next()
    metrics = (await live.http.get(f"http://127.0.0.1:{live.port}/metrics")).text

    assert to_bob == to_alice
    assert to_bob["kind"] == "FOLLOW"
    assert (to_bob["actor"], to_bob["target"]) == ({"userId": "alice"}, {"userId": "bob"})
    at = datetime.strptime(to_bob["at"], ISO).replace(tzinfo=UTC)
    assert before - timedelta(seconds=2) <= at <= datetime.now(UTC) + timedelta(seconds=2)
    assert await live.store.redis.xrange(live.store.keys.log("alice"), to_bob["eventId"], to_bob["eventId"])
    # The process timed the event's way from the log to its subscribers (one FOLLOW, two users).
    assert "followgraph_event_dispatch_delay_seconds_count 1.0" in metrics


async def test_without_a_token_the_subscription_is_refused_with_a_clear_error(live: Live) -> None:
    async with listen(live.ws_url, None) as anonymous:
        error = await anonymous.error()

    assert isinstance(error, TransportQueryError)
    assert error.errors is not None
    assert error.errors[0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert "token" in error.errors[0]["message"]


# Not ids at all, then ids Redis refuses (they reached it, and its error the client, #36): a part of
# 2^64 or more, digits of another script, and the largest id, after which no range starts.
@pytest.mark.parametrize(
    "after",
    [
        "yesterday",
        "18446744073709551616-0",
        "1-18446744073709551616",
        "\u0661\u0662-0",
        "18446744073709551615-18446744073709551615",
    ],
    ids=["word", "ms-too-big", "seq-too-big", "arabic-digits", "largest-id"],
)
async def test_a_malformed_after_is_bad_user_input(live: Live, after: str) -> None:
    await live.register("alice")
    async with listen(live.ws_url, live.token("alice"), after=after) as alice:
        error = await alice.error()

    assert isinstance(error, TransportQueryError) and error.errors is not None
    assert error.errors == [
        {
            "message": "`after` must be an eventId from viewerEvents (ms-seq, two whole numbers "
            f"below 2^64, e.g. 1764556800000-0), got {after!r}.",
            "extensions": {"code": "BAD_USER_INPUT", "argument": "after"},
        }
    ]


async def test_reconnecting_with_after_replays_the_missed_events_then_goes_live_without_gap_or_duplicate(
    live: Live,
) -> None:
    await live.register("alice", "bob", "carol")
    async with listen(live.ws_url, live.token("bob")) as bob:
        await live.subscribers(1)
        await live.data(FOLLOW, {"id": "bob"}, as_user="alice")
        last = await bob.next()
    # Missed while away: carol follows bob, alice unfollows; a change of others' is not bob's.
    await live.data(FOLLOW, {"id": "bob"}, as_user="carol")
    await live.data(UNFOLLOW, {"id": "bob"}, as_user="alice")
    await live.data(FOLLOW, {"id": "carol"}, as_user="alice")

    async with listen(live.ws_url, live.token("bob"), after=last["eventId"]) as bob:
        replayed = await bob.take(2)
        await live.subscribers(1)
        await live.data(FOLLOW, {"id": "alice"}, as_user="bob")
        live_event = await bob.next()
        await bob.quiet(0.3)

    assert [(e["kind"], e["actor"]["userId"]) for e in replayed] == [
        ("FOLLOW", "carol"),
        ("UNFOLLOW", "alice"),
    ]
    assert (live_event["kind"], live_event["target"]["userId"]) == ("FOLLOW", "alice")
    ids = [e["eventId"] for e in [last, *replayed, live_event]]
    assert len(set(ids)) == 4


async def test_events_of_muted_users_and_others_blocks_and_mutes_are_not_pushed(live: Live) -> None:
    await live.register("alice", "bob", "carol", "dave")
    async with listen(live.ws_url, live.token("bob")) as bob:
        await live.subscribers(1)
        await live.data(MUTE, {"id": "carol"}, as_user="bob")
        assert (await bob.next())["kind"] == "MUTE"  # bob's own mute is his event
        await live.data(FOLLOW, {"id": "bob"}, as_user="carol")  # muted: not pushed
        await live.data(MUTE, {"id": "bob"}, as_user="dave")  # done to bob by another: never pushed
        await live.data(BLOCK, {"id": "bob"}, as_user="dave")
        await live.data(FOLLOW, {"id": "bob"}, as_user="alice")
        pushed = await bob.next()
        await live.data(UNMUTE, {"id": "carol"}, as_user="bob")
        assert (await bob.next())["kind"] == "UNMUTE"
        await live.data(UNFOLLOW, {"id": "bob"}, as_user="carol")  # no longer muted
        after_unmute = await bob.next()
        await bob.quiet(0.3)

    assert (pushed["kind"], pushed["actor"]["userId"]) == ("FOLLOW", "alice")
    assert (after_unmute["kind"], after_unmute["actor"]["userId"]) == ("UNFOLLOW", "carol")
