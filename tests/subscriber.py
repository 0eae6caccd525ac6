"""A viewerEvents subscriber for the tests: the Python `gql` client over graphql-transport-ws."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport

EVENT_FIELDS = "eventId kind actor { userId } target { userId } at"
VIEWER_EVENTS = (
    f"subscription ViewerEvents($after: String) {{ viewerEvents(after: $after) {{ {EVENT_FIELDS} }} }}"
)


@dataclass
class Listener:
    """What one subscription received, in order; an exception that ended it comes last."""

    queue: asyncio.Queue[dict[str, Any] | Exception] = field(default_factory=asyncio.Queue)

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            item = await self.queue.get()
        if isinstance(item, Exception):
            raise item
        return item

    async def take(self, n: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        return [await self.next(timeout) for _ in range(n)]

    async def error(self, timeout: float = 5.0) -> Exception:
        """The exception that ended the subscription (events before it are skipped)."""
        async with asyncio.timeout(timeout):
            while True:
                item = await self.queue.get()
                if isinstance(item, Exception):
                    return item

    async def quiet(self, seconds: float = 0.5) -> None:
        """Nothing more arrives within `seconds`."""
        await asyncio.sleep(seconds)
        assert self.queue.empty(), self.queue.get_nowait()


def transport(ws_url: str, token: str | None) -> WebsocketsTransport:
    payload = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return WebsocketsTransport(url=ws_url, init_payload=payload, close_timeout=2)


@asynccontextmanager
async def listen(
    ws_url: str, token: str | None, *, after: str | None = None, query: str = VIEWER_EVENTS
) -> AsyncIterator[Listener]:
    """A subscription to viewerEvents on its own connection, pumped into a Listener."""
    listener = Listener()
    async with Client(transport=transport(ws_url, token)) as session:

        async def pump() -> None:
            try:
                request = gql(query)
                request.variable_values = {"after": after}
                async for result in session.subscribe(request):
                    listener.queue.put_nowait(result["viewerEvents"])
            except Exception as exc:
                listener.queue.put_nowait(exc)

        task = asyncio.create_task(pump())
        try:
            yield listener
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
