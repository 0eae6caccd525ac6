"""A process that holds viewerEvents subscriptions for a test: `python -m tests.transport.subscribing_clients
WS_URL`, driven one line at a time on its standard input, each answered with one line:

- `open TOKEN...`: a socket per token (connection_init with it, then subscribe as id 1): `opened N`;
- `received`: how many `next` messages the sockets have received: `received N`;
- `complete`: a `complete` for each socket's subscription, the sockets left open: `completed`;
- `close`: every socket closed: `closed`.

It exits when its standard input closes. Its own objects are not the server's: a test counting what
the server's process leaves to the cyclic collector keeps its client out of that process.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

QUERY = "subscription ViewerEvents { viewerEvents { eventId kind } }"


class Sockets:
    def __init__(self, url: str) -> None:
        self.url = url
        self.open: list[tuple[ClientConnection, asyncio.Task[None]]] = []
        self.received = 0

    async def subscribe(self, token: str) -> None:
        socket = await connect(self.url, subprotocols=[Subprotocol("graphql-transport-ws")], compression=None)
        init = {"type": "connection_init", "payload": {"Authorization": f"Bearer {token}"}}
        await socket.send(orjson.dumps(init).decode())
        ack = orjson.loads(await socket.recv())
        assert ack["type"] == "connection_ack", ack
        await socket.send(
            orjson.dumps({"id": "1", "type": "subscribe", "payload": {"query": QUERY}}).decode()
        )
        self.open.append((socket, asyncio.create_task(self.read(socket))))

    async def read(self, socket: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in socket:
                self.received += orjson.loads(message)["type"] == "next"

    async def answer(self, line: str) -> str:
        command, *tokens = line.split()
        if command == "open":
            await asyncio.gather(*(self.subscribe(token) for token in tokens))
            return f"opened {len(tokens)}"
        if command == "received":
            return f"received {self.received}"
        if command == "complete":
            for socket, _ in self.open:
                await socket.send('{"id": "1", "type": "complete"}')
            return "completed"
        if command == "close":
            for socket, reader in self.open:
                await socket.close()
                await reader
            self.open.clear()
            return "closed"
        raise ValueError(f"unknown command {command!r}")


async def serve(url: str) -> None:
    sockets = Sockets(url)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        sys.stdout.write(await sockets.answer(line) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
