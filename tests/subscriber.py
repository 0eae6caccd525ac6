"""A viewerEvents subscriber for the tests: the Python `gql` client over graphql-transport-ws."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from gql import Client, gql
from gql.transport.websockets import WebsocketsTransport
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

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


class Raw:
    """A bare graphql-transport-ws client, to see the protocol's messages and close codes."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection

    async def send(self, message: dict[str, Any]) -> None:
        await self.connection.send(orjson.dumps(message).decode())

    async def receive(self, timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            message: dict[str, Any] = orjson.loads(await self.connection.recv())
        return message

    async def init(self, token: str | None) -> None:
        await self.send({"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}})

    async def subscribe(self, id: str, after: str | None = None, query: str = VIEWER_EVENTS) -> None:
        payload = {"query": query, "variables": {"after": after}, "operationName": "ViewerEvents"}
        await self.send({"id": id, "type": "subscribe", "payload": payload})

    async def closed(self, timeout: float = 5.0) -> tuple[int | None, str | None]:
        """The close code and reason once the server closes (messages before it are dropped)."""
        async with asyncio.timeout(timeout):
            try:
                while True:
                    await self.connection.recv()
            except ConnectionClosed as exc:
                received = exc.rcvd
                return (received.code, received.reason) if received is not None else (None, None)


@asynccontextmanager
async def raw(ws_url: str) -> AsyncIterator[Raw]:
    async with connect(ws_url, subprotocols=["graphql-transport-ws"]) as connection:  # type: ignore[list-item]
        yield Raw(connection)
