"""Instructions the server spends on the fans page in process, on one Redis and on a cluster.

The cluster's throughput beside one Redis' moves by a tenth from run to run on a shared machine
(docs/performance.md), so a change to the cluster's read path that saves a few percent does not
show in it. Its instructions do: the whole /graphql app (bench/layers.py's A endpoint, called as
uvicorn calls it, the access line written as the server writes it) answers PAGES fans pages,
CONCURRENCY at a time as under load, once WARM pages have filled every cache, and callgrind counts
the server's instructions (bench/callgrind.py), the same to within about half a percent in every run.
What the count leaves out: the kernel's side of the sockets, and how the replies of several nodes
fall into the turns of the event loop (under callgrind the nodes always answer before the server
looks: a read that waits for several of them wakes once here, and may wake more under load).

Run as `python -m bench.page_instructions < spec.json` under callgrind, by `counts`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import orjson
import uvloop

from bench import callgrind
from bench.layers import asgi_caller, concurrently, production_settings
from bench.queries import FANS_QUERY
from followgraph.server.app import create_app

PAGES = 640
WARM = 640


@dataclass(frozen=True, slots=True)
class PageSpec:
    redis_url: str
    secret: str
    token: str
    user_id: str

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def counts(specs: list[PageSpec]) -> list[float]:
    """Each spec's instructions a page; [] when valgrind is not installed. The servers get ready
    side by side, then are counted one after the other."""
    if not callgrind.available():
        return []
    module = ["bench.page_instructions"]
    with contextlib.ExitStack() as stack:
        children = [
            stack.enter_context(
                callgrind.Counted(f"the fans page on {spec.redis_url}", module, spec.to_json())
            )
            for spec in specs
        ]
        totals = []
        for child in children:
            child.go()
            totals.append(child.total() / PAGES)
        return totals


async def _counted(spec: PageSpec) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="followgraph-page-instructions-") as tmp,
        (Path(tmp) / "access.log").open("w") as log,
    ):
        app = create_app(production_settings(spec.redis_url, spec.secret, log))
        async with app.router.lifespan_context(app):
            store = app.state.store
            # Counted on a graph whose search index is built (the bench's servers built it): an
            # index being built would be counted with the pages.
            if not await store.redis.exists(store.keys.search_built()):
                raise RuntimeError(f"the search index on {spec.redis_url} is not built yet")
            body = orjson.dumps({"query": FANS_QUERY, "variables": {"userId": spec.user_id, "first": 20}})
            page = asgi_caller(app, "/graphql", body, spec.token)
            answer = orjson.loads(await page())
            if answer.get("errors") or not answer.get("data"):
                raise RuntimeError(f"the fans page on {spec.redis_url} did not answer: {answer}")
            await concurrently(page, WARM)
            print("ready", flush=True)
            sys.stdin.readline()
            await concurrently(page, PAGES)
            os._exit(0)  # counted to here: nothing of the shutdown


def main() -> None:
    spec = PageSpec(**json.loads(sys.stdin.readline()))
    uvloop.run(_counted(spec))


if __name__ == "__main__":
    main()
