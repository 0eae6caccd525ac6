"""Key names on a Redis Cluster: a user's keys, its slot and its slot's change log agree."""

from __future__ import annotations

import pytest
from redis.crc import key_slot

from followgraph.store.graph.keys import Keys

IDS = ["a", "alice", "user-42", "X_y-Z", "9" * 64]


@pytest.mark.parametrize("prefix", ["fg:", "other:app:"])
@pytest.mark.parametrize("user_id", IDS)
def test_slot_is_the_slot_of_every_key_of_the_user(prefix: str, user_id: str) -> None:
    keys = Keys(prefix, sharded=True)
    names = [
        keys.profile(user_id),
        keys.following(user_id),
        keys.fans(user_id),
        keys.requests_out(user_id),
        keys.follow_limit(user_id),
        keys.log(user_id),
    ]
    assert {key_slot(name.encode()) for name in names} == {keys.slot(user_id)}


def test_the_log_of_a_single_redis_is_one_stream() -> None:
    keys = Keys("fg:")
    assert {keys.log(user_id) for user_id in IDS} == {"fg:log"} == set(keys.logs())


def test_a_cluster_has_a_log_per_slot() -> None:
    keys = Keys("fg:", sharded=True)
    logs = keys.logs()
    assert len(set(logs)) == len(logs) == 16384
    assert [key_slot(name.encode()) for name in logs[:50]] == list(range(50))
