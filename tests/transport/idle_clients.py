"""A process that opens idle connections and holds them: `python -m tests.transport.idle_clients PORT N`.

Each connection sends `GET / HTTP/1.1\\r\\n` and nothing more. It prints `opened O refused R` once
all are attempted, and exits (closing them) when its standard input closes. A process can hold
fewer sockets than its open-file limit, so a flood larger than that limit takes several of them.
"""

from __future__ import annotations

import asyncio
import resource
import sys


class Idle(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.write(b"GET / HTTP/1.1\r\n")


async def flood(port: int, count: int) -> None:
    loop = asyncio.get_running_loop()
    transports: list[asyncio.BaseTransport] = []
    refused = 0
    gate = asyncio.Semaphore(500)

    async def open_one() -> None:
        nonlocal refused
        async with gate:
            try:
                transport, _ = await loop.create_connection(Idle, "127.0.0.1", port)
            except OSError:
                refused += 1
                return
            transports.append(transport)

    await asyncio.gather(*(open_one() for _ in range(count)))
    sys.stdout.write(f"opened {len(transports)} refused {refused}\n")
    sys.stdout.flush()
    await loop.run_in_executor(None, sys.stdin.read)
    for transport in transports:
        transport.close()


def capacity() -> int:
    """Raise the open-file soft limit to the hard one; how many sockets this process can then hold."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    most = 65_536 if hard == resource.RLIM_INFINITY else min(hard, 65_536)
    resource.setrlimit(resource.RLIMIT_NOFILE, (most, hard))
    return most - 100


if __name__ == "__main__":
    capacity()
    asyncio.run(flood(int(sys.argv[1]), int(sys.argv[2])))
