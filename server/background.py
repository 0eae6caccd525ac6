"""The change log's consumers that a server process runs beside its requests (the SQL copy's
feeder, the search index's), started with the process and stopped cleanly with it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

log = logging.getLogger(__name__)

# How long a worker has to stop once asked.
STOP_SECONDS = 10


class Worker(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...

    async def aclose(self) -> None: ...


@contextlib.asynccontextmanager
async def running(workers: Sequence[Worker]) -> AsyncIterator[None]:
    """Run `workers` in the background for the duration of the block, then stop them cleanly."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(worker.run(stop)) for worker in workers]
    try:
        yield
    finally:
        stop.set()
        for worker, task in zip(workers, tasks, strict=True):
            try:
                await asyncio.wait_for(task, timeout=STOP_SECONDS)
            except TimeoutError:
                log.warning("%s did not stop within %d s", type(worker).__name__, STOP_SECONDS)
            await worker.aclose()
