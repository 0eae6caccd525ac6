"""Request deadlines with one timer for all of an endpoint's requests.

`asyncio.timeout` arms a timer of the event loop per request and cancels it at the end: some
10 µs a request, more than the whole of a small page's HTTP handling. Every request of an endpoint
has the same timeout, so deadlines fall in the order requests arrive: `Deadlines` keeps the
requests in flight in that order and one timer on the oldest, as the read channel does for its
calls (store/redis/channel.py). Entering and leaving cost a dictionary insert and delete; the timer
fires about once a timeout while requests keep coming, and not at all when none are in flight.

A request past its deadline is cancelled as `asyncio.timeout` would cancel it, and its block
raises TimeoutError; a cancellation from elsewhere (the client went away) stays a cancellation.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class Deadlines:
    """Cancels the tasks that stay in a `within()` block longer than `seconds`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        # Tasks in flight and their deadlines (loop time), oldest first.
        self._due: dict[asyncio.Task[object], float] = {}
        # Tasks this cancelled, until their block turns the cancellation into TimeoutError.
        self._expired: set[asyncio.Task[object]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def within(self) -> _Within:
        """`with deadlines.within() as due:` the block of the current task, limited to `seconds`;
        `due` is when (loop time) it is cancelled. A plain `with`, where asyncio.timeout's is
        `async with`: entering and leaving wait for nothing, and cost no coroutine."""
        return _Within(self)

    def due(self) -> float | None:
        """When (loop time) the current task's block is cancelled; None outside a block."""
        task = asyncio.current_task()
        return None if task is None else self._due.get(task)

    def _enter(self, task: asyncio.Task[object]) -> float:
        loop = asyncio.get_running_loop()
        due = loop.time() + self.seconds
        self._due[task] = due
        if self._timer is None:
            self._timer = loop.call_at(due, self._expire)
        return due

    def _leave(self, task: asyncio.Task[object]) -> bool:
        """Forget `task`; whether its deadline passed (and this cancelled it)."""
        self._due.pop(task, None)
        if task not in self._expired:  # the usual case: no exception raised and caught
            return False
        self._expired.remove(task)
        return True

    def _expire(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        for task, due in list(self._due.items()):
            if due > now:
                self._timer = loop.call_at(due, self._expire)
                return
            del self._due[task]
            if not task.done():
                self._expired.add(task)
                task.cancel()


class _Within:
    __slots__ = ("_deadlines", "_task")

    def __init__(self, deadlines: Deadlines) -> None:
        self._deadlines = deadlines
        self._task: asyncio.Task[object] | None = None

    def __enter__(self) -> float:
        """The block's deadline (loop time)."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Deadlines.within() runs in a task.")
        self._task = task
        return self._deadlines._enter(task)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        task = self._task
        assert task is not None
        if not self._deadlines._leave(task):
            return
        # This cancelled the task: take that cancellation back. When nothing else cancelled it
        # too, the block ends in TimeoutError, as it would under asyncio.timeout.
        if task.uncancel() == 0 and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc
