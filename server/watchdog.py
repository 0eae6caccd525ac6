"""Keeps the embedded Redis of `followgraph serve` running: restarts it from its AOF when it exits.

A thread polls the redis-server child. When it exits on its own (killed, crashed, out of memory),
the watchdog starts it again on the same directory, so it loads its AOF, after a delay that
doubles on every failed start. Every exit and restart is logged and counted. After
`give_up_after` failed starts in a row the process is not alive any more (`problem()` says why,
and /healthz answers 503 so that an orchestrator restarts it); the watchdog still tries, at the
longest delay, and is alive again when a start succeeds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from followgraph.server.redis_server import RedisServer, RedisServerError

log = logging.getLogger(__name__)


class RedisWatchdog(Collector):
    """Restarts `server` whenever it exits while watched; a Prometheus collector of its restarts."""

    def __init__(
        self,
        server: RedisServer,
        *,
        first_delay: float = 0.1,
        longest_delay: float = 10.0,
        give_up_after: int = 5,
        poll: float = 0.2,
        on_give_up: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.first_delay = first_delay
        self.longest_delay = longest_delay
        self.give_up_after = give_up_after
        self.poll = poll
        self.on_give_up = on_give_up
        self.exits = 0
        self.restarts = 0
        self.failed_starts = 0  # in a row
        self._failed_total = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="redis-watchdog", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (before stopping the server on purpose)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def problem(self) -> str | None:
        """Why this process cannot serve any more, or None while it can."""
        if self.failed_starts >= self.give_up_after:
            return f"the embedded Redis exited and {self.failed_starts} restarts in a row failed"
        return None

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "followgraph_embedded_redis_restarts",
            "Times the embedded Redis exited on its own and was started again.",
            value=self.restarts,
        )
        yield CounterMetricFamily(
            "followgraph_embedded_redis_failed_starts",
            "Restarts of the embedded Redis that failed.",
            value=self._failed_total,
        )

    def _watch(self) -> None:
        while not self._stopping.wait(self.poll):
            if self.server.running:
                continue
            process = self.server.process
            self.exits += 1
            log.error(
                "the embedded redis exited on its own; restarting it",
                extra={"exit_code": process.returncode if process is not None else None},
            )
            self._restart()

    def _restart(self) -> None:
        delay = self.first_delay
        while not self._stopping.wait(delay):
            try:
                self.server.kill()  # reap the dead child and close its pipes
                self.server.start()
            except RedisServerError as exc:
                self.failed_starts += 1
                self._failed_total += 1
                log.error("the embedded redis did not start again (%d in a row): %s", self.failed_starts, exc)
                if self.failed_starts == self.give_up_after:
                    log.critical("giving up on the embedded redis: %s", self.problem())
                    if self.on_give_up is not None:
                        self.on_give_up()
                delay = min(delay * 2, self.longest_delay)
                continue
            self.restarts += 1
            self.failed_starts = 0
            log.warning("the embedded redis is running again (restart %d)", self.restarts)
            return
