"""FOLLOWGRAPH_WRITE_REPLICAS=1 through the API, on a primary with a live replica (real servers):
mutations succeed while the replica confirms; with the replica paused each one is answered
WRITE_NOT_REPLICATED within the timeout, saying why, by the compiled plan and the general executor
alike, and counted; reads go on as before; the retry succeeds once the replica is back."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from followgraph.store.redis.replicas import WRITE_NOT_REPLICATED
from tests.faults.support import fault_settings
from tests.replicated import Replicated, primary_and_replica
from tests.served import Served, serve

TIMEOUT = 1.0
FOLLOW = "mutation Follow($id: ID!) { follow(input: {userId: $id}) { changed relationship } }"
REMOVE_FAN = "mutation($id: ID!) { removeFan(input: {userId: $id}) { changed } }"
FANS = 'query Fans { user(userId: "b") { fansCount fans(first: 10) { edges { node { userId } } } } }'


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Replicated]:
    with primary_and_replica(tmp_path) as replicated:
        yield replicated


@pytest.fixture
async def api(pair: Replicated, tmp_path: Path) -> AsyncIterator[Served]:
    settings = fault_settings(
        tmp_path,
        pair.url,
        redis_timeout=2 * TIMEOUT,
        write_replicas=1,
        write_replicas_timeout=TIMEOUT,
        database_url="off",
        search_index=False,
    )
    async with serve(settings) as served:
        await served.register("a", "b", "c", "d")
        yield served


def _not_replicated(body: dict[str, object]) -> str:
    """The message of a response whose one error is WRITE_NOT_REPLICATED, with no data."""
    errors = body["errors"]
    assert isinstance(errors, list) and len(errors) == 1, body
    [error] = errors
    assert error["extensions"] == {"code": WRITE_NOT_REPLICATED}, error
    assert body["data"] is None, body
    return str(error["message"])


def _counted(api: Served) -> dict[tuple[str, str], float]:
    text = api.app.state.metrics.render().decode()
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "followgraph_requests_total" and sample.labels["outcome"] == "not_replicated":
                found["requests", sample.labels["operation"]] = sample.value
            if sample.name == "followgraph_redis_errors_total":
                found["redis", sample.labels["error"]] = sample.value
    return found


async def test_a_write_the_replica_confirms_succeeds_and_one_it_does_not_is_an_error_to_retry(
    api: Served, pair: Replicated
) -> None:
    # The general executor, then the compiled plan (Redis has the script by then).
    assert (await api.data(FOLLOW, {"id": "c"}, as_user="a"))["follow"]["changed"]
    waits = pair.calls("wait")
    for follower in ("a", "c"):
        assert (await api.data(FOLLOW, {"id": "b"}, as_user=follower))["follow"]["changed"]
    assert pair.calls("wait") == waits + 2
    # Redis learns the script (one it does not know is run again once loaded, and waits again).
    assert not (await api.data(REMOVE_FAN, {"id": "a"}, as_user="d"))["removeFan"]["changed"]
    reads = pair.calls("wait")
    assert (await api.data(FANS))["user"]["fansCount"] == 2
    assert pair.calls("wait") == reads, "a read waited for the replicas"

    with pair.paused():
        for document, variables, user in ((FOLLOW, {"id": "d"}, "b"), (REMOVE_FAN, {"id": "c"}, "b")):
            started = time.monotonic()
            response = await api.post(document, variables, as_user=user)
            assert TIMEOUT <= time.monotonic() - started < TIMEOUT + 1.0
            assert response.status_code == 200
            message = _not_replicated(response.json())
            assert "not confirmed by the replicas" in message
            assert "0 of the 1 replica(s) it waits for confirmed it within 1 s" in message
            assert "Send it again" in message
        # Reads go on, at once, and see what the primary has.
        started = time.monotonic()
        fans = await api.data(FANS)
        assert time.monotonic() - started < TIMEOUT
        assert {e["node"]["userId"] for e in fans["user"]["fans"]["edges"]} == {"a"}
    counted = _counted(api)
    assert counted["requests", "Follow"] == 1
    assert counted["requests", "unnamed"] == 1
    assert counted["redis", "WriteNotReplicatedError"] == 2
    # Sent again once the replica is back: confirmed (the follow was made the first time).
    pair.wait_synced()
    again = await api.data(FOLLOW, {"id": "d"}, as_user="b")
    assert again["follow"] == {"changed": False, "relationship": "FOLLOWING"}
