"""The checkpoint of an import read back: where the rows written end, and their counts."""

from __future__ import annotations

import redis.asyncio as aioredis

from followgraph.cli.checkpoints import Checkpoints
from followgraph.cli.edge_files import Mark
from followgraph.cli.transfer import Summary
from followgraph.store import FollowStore


async def test_a_checkpoint_keeps_its_mark_with_the_counts_of_the_rows_before_it(
    real_redis: aioredis.Redis,
) -> None:
    checkpoints = Checkpoints(FollowStore(real_redis), "file:/data/follows.csv", "follows.csv")
    assert await checkpoints.read() is None
    first, second = Mark(100, 5001, 7), Mark(200, 10001, 9)
    await checkpoints.counted(Summary(rows=5000, written=5000), first)
    kept = await checkpoints.read()
    assert kept is not None
    assert (kept.mark, kept.summary.rows, kept.summary.written) == (first, 5000, 5000)
    await checkpoints.counted(Summary(rows=10000, written=9000, unchanged=1000), second)
    kept = await checkpoints.read()
    assert kept is not None
    assert (kept.mark, kept.summary.rows, kept.summary.unchanged, kept.source) == (
        second,
        10000,
        1000,
        "follows.csv",
    )
    await checkpoints.clear()
    assert await checkpoints.read() is None
