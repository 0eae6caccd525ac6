"""Request deadlines (transport/deadlines.py): one timer for all requests, asyncio.timeout's behaviour."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from followgraph.transport.deadlines import Deadlines


async def inside(deadlines: Deadlines, work: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
    """A task running `work` in a `deadlines.within()` block, once it has entered the block."""
    entered = asyncio.Event()

    async def request() -> None:
        with deadlines.within():
            entered.set()
            await work()

    task = asyncio.create_task(request())
    await entered.wait()
    return task


async def test_a_block_past_its_deadline_ends_in_timeout_error() -> None:
    deadlines = Deadlines(0.05)
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        with deadlines.within():
            await asyncio.sleep(10)
    assert time.perf_counter() - started < 5
    # The task is not left cancelling: it goes on and may wait again.
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)


async def test_a_block_that_ends_in_time_is_not_cancelled_later() -> None:
    deadlines = Deadlines(0.05)
    with deadlines.within():
        await asyncio.sleep(0)
    # Past the deadline the finished block's task is left alone.
    await asyncio.sleep(0.15)
    assert not deadlines._due and not deadlines._expired


async def test_each_request_gets_its_own_deadline_with_one_timer() -> None:
    deadlines = Deadlines(0.2)
    outcomes: dict[str, str] = {}

    async def request(name: str, work: float) -> None:
        try:
            with deadlines.within():
                await asyncio.sleep(work)
            outcomes[name] = "done"
        except TimeoutError:
            outcomes[name] = "timed out"

    slow = asyncio.create_task(request("slow", 10))
    await asyncio.sleep(0.1)
    # Started later: its deadline is later than the slow one's, and it finishes before it.
    quick = asyncio.create_task(request("quick", 0.15))
    late = asyncio.create_task(request("late", 10))
    await asyncio.gather(slow, quick, late)
    assert outcomes == {"slow": "timed out", "quick": "done", "late": "timed out"}
    assert deadlines._timer is None  # nothing in flight: no timer armed


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    deadlines = Deadlines(10)
    task = await inside(deadlines, lambda: asyncio.sleep(10))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not deadlines._due


async def test_expiry_and_a_cancellation_from_elsewhere_together_stay_a_cancellation() -> None:
    deadlines = Deadlines(0.05)

    async def work() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            # Both cancel it: the client went away as the deadline passed.
            asyncio.current_task().cancel()  # type: ignore[union-attr]
            await asyncio.sleep(0)

    task = await inside(deadlines, work)
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_due_is_the_current_blocks_deadline_and_none_outside_one() -> None:
    deadlines = Deadlines(5.0)
    assert deadlines.due() is None
    loop = asyncio.get_running_loop()
    before = loop.time()
    with deadlines.within() as entered:
        due = deadlines.due()
        assert due is not None and before + 5.0 <= due <= loop.time() + 5.0
        assert entered == due
    assert deadlines.due() is None
