"""The checkpoint of an import read back: it goes on from where the counts kept end."""

from __future__ import annotations

import redis.asyncio as aioredis

from followgraph.cli.checkpoints import Checkpoints
from followgraph.cli.edge_files import Mark
from followgraph.cli.transfer import Summary
from followgraph.store import FollowStore


async def batch_wrote(checkpoints: Checkpoints, mark: Mark) -> None:
    """What a batch's script writes of the checkpoint, with the batch: its mark alone."""
    checkpoint = checkpoints.values(mark)
    await checkpoints.store.redis.execute_command("HSET", checkpoint.key, *checkpoint.values)


async def test_counts_behind_the_mark_resume_where_they_end(real_redis: aioredis.Redis) -> None:
    checkpoints = Checkpoints(FollowStore(real_redis), "file:/data/follows.csv", "follows.csv")
    first, second = Mark(100, 5001, 7), Mark(200, 10001, 9)
    await batch_wrote(checkpoints, first)
    assert await checkpoints.read() is None  # killed before its first counts: start over
    await checkpoints.counted(Summary(rows=5000, written=5000), first)
    # The next batch wrote its mark; the import was killed before its counts.
    await batch_wrote(checkpoints, second)
    kept = await checkpoints.read()
    assert kept is not None
    assert (kept.mark, kept.summary.rows, kept.summary.written) == (first, 5000, 5000)
    await checkpoints.counted(Summary(rows=10000, written=9000, unchanged=1000), second)
    kept = await checkpoints.read()
    assert kept is not None
    assert (kept.mark, kept.summary.rows, kept.source) == (second, 10000, "follows.csv")
