"""Counting Redis round trips, for the tests and the benchmark that prove batching by counting
(test instrumentation: the product modules only offer the `count_send` hook it uses)."""

from __future__ import annotations

from typing import Any


class RoundTripCounter:
    """Mixin for a redis-py connection class: counts every write to the socket (one per command,
    or one per pipeline), handshakes aside, in the class attribute `sent`."""

    sent = 0
    connecting = False

    @classmethod
    def count_send(cls) -> None:
        """One write of the store's read channel (store/redis/channel.py), counted with the pool's."""
        cls.sent += 1

    async def on_connect_check_health(self, check_health: bool = True) -> None:
        self.connecting = True
        try:
            await super().on_connect_check_health(check_health)  # type: ignore[misc]
        finally:
            self.connecting = False

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if not self.connecting:
            type(self).sent += 1
        await super().send_packed_command(command, check_health)  # type: ignore[misc]
