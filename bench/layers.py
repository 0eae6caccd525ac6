"""Where A's CPU goes: the side-by-side page in process, one layer of A at a time, beside B.

Every layer answers the page of the side-by-side table (the same JSON as B's answer, checked
first) in this process, on uvloop, 32 pages at a time on one Redis. Each layer adds its own
work to the one above it:

- B without the rules: B with the owner's settings and blocks left out of its PAGE call, which
  shows what applying them costs B (beside A's rows, what they cost A is in "A reads");
- B: the plain endpoint's ASGI app (bench/plain.py), called as uvicorn calls it;
- A reads: A's reads as A store makes them (the list query, the PAGE script, the users' columns),
  with the answer written by hand in one loop over the page and the replies, as B writes its own;
- A store: the same reads with the compiled plan's builders (the root user's facts, the
  connection's columns), then orjson;
- A plan: the compiled plan's run (the variables, the arguments, the root user and its list) with
  a request's context;
- A executor: Executor.execute, which finds the plan by its document;
- A endpoint: the whole /graphql ASGI app (headers, request id, body, token, deadline, metrics,
  the access line), called as uvicorn calls it;
- A endpoint, traced: the same app with tracing on (transport/tracing.py, exported over OTLP/HTTP
  to a sink in another process, bench/tracing.py), each request carrying a caller's traceparent:
  not sampled (the caller's flag 00: what every request pays for tracing being on), then sampled
  (01: its request, operation and Redis round trips in spans, encoded and sent; the batch's spans
  are all exported before its CPU time is read).

HTTP parsing and the sockets to the client are in none of them: both servers run on the same
uvicorn. The layers take turns, batch by batch; CPU time (process_time) per page, each layer's
fastest quarter of batches (the machine's speed moves within seconds; the quartile is steadier than
the mean, and the minimum is also given).

Instructions a page: where valgrind is installed, each layer also runs under callgrind, one page
after another, counted only while its pages run (`--instructions LAYER PAGES`, started by
`instructions()`). The count is the same, to a few in ten thousand, whatever else the machine does,
while its CPU time moves by half within minutes: a change of 1% shows.

Run as `python -m bench.layers < spec.json`, pinned to the servers' CPU; prints JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import json
import logging
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson
import uvloop

from bench import callgrind
from bench.plain import RELATIONSHIPS, PlainApp
from bench.queries import FANS_QUERY
from bench.tracing import NOT_SAMPLED, SAMPLED, exported_to, otlp_sink
from followgraph.executor.plan import Plan
from followgraph.resolvers.context import Context
from followgraph.schema.scalars import serialize_datetime
from followgraph.server.app import create_app
from followgraph.server.settings import Settings
from followgraph.store import FollowStore, UserColumns
from followgraph.store import Page as ListPage
from followgraph.store.graph.columns import PROFILE_WIDTH
from followgraph.store.graph.scripts import PROFILE_FIELDS
from followgraph.transport.logs import configure_logging

CONCURRENCY = 32
BATCH = 480
Page = Callable[[], Awaitable[bytes]]
# What a layer does after its batch of pages and before the batch's CPU time is read.
Settle = Callable[[], None]
TRACED = ("A endpoint, traced, not sampled", "A endpoint, traced, sampled")
LAYERS = ("B without the rules", "B", "A reads", "A store", "A plan", "A executor", "A endpoint", *TRACED)


@dataclass(frozen=True, slots=True)
class LayerSpec:
    redis_port: int
    secret: str
    token: str
    viewer: str
    user_id: str
    batches: int = 40

    def to_json(self) -> str:
        return json.dumps(asdict(self))


@dataclass(frozen=True, slots=True)
class Layer:
    name: str
    quartile_us: float  # CPU per page, the fastest quarter of batches
    min_us: float
    # Python-level calls per page (cProfile's count of function and builtin calls): the same in
    # every run of the same code, whatever the machine is doing.
    calls: float = 0.0
    # Instructions per page, one page at a time (callgrind); 0 without valgrind.
    instructions: float = 0.0


def asgi_caller(app: Any, path: str, body: bytes, token: str, traceparent: str | None = None) -> Page:
    """One POST through an ASGI app, the scope as uvicorn builds it; returns the body sent."""
    headers = [
        (b"host", b"127.0.0.1"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if traceparent is not None:
        headers.append((b"traceparent", traceparent.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "root_path": "",
        "state": {},
    }
    message = {"type": "http.request", "body": body, "more_body": False}

    async def receive() -> dict[str, Any]:
        return message

    async def page() -> bytes:
        sent: list[bytes] = []

        async def send(event: dict[str, Any]) -> None:
            if event["type"] == "http.response.body":
                sent.append(event["body"])

        await app(dict(scope), receive, send)
        return b"".join(sent)

    return page


async def _calls_per_page(page: Page, pages: int = 256) -> float:
    """Calls per page, counted by cProfile over `pages` pages (one at a time: the count does not
    depend on how pages interleave)."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        for _ in range(pages):
            await page()
    finally:
        profile.disable()
    stats: dict[Any, tuple[int, ...]] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return sum(row[1] for row in stats.values()) / pages


async def concurrently(page: Page, pages: int) -> int:
    """`pages` pages (rounded down to a multiple of CONCURRENCY), CONCURRENCY at a time, as under
    load; how many ran."""
    each = pages // CONCURRENCY

    async def worker() -> None:
        for _ in range(each):
            await page()

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return each * CONCURRENCY


async def _cpu_per_page(page: Page, pages: int, settle: Settle | None = None) -> float:
    """CPU µs per page, `pages` of them CONCURRENCY at a time (and `settle` after them)."""
    started = time.process_time()
    ran = await concurrently(page, pages)
    if settle is not None:
        settle()
    return (time.process_time() - started) / ran * 1e6


def production_settings(redis_url: str, secret: str, log: TextIO) -> Settings:
    """A production server's settings on `redis_url`, with no SQL copy, its logging set up as
    the server's (the access line at info) but written to `log`."""
    real, sys.stderr = sys.stderr, log
    try:
        configure_logging("info")
    finally:
        sys.stderr = real
    return Settings.from_env({}, redis_url=redis_url, jwt_secret=secret, production=True, database_url="off")


async def _layers(
    spec: LayerSpec, log: TextIO, stack: contextlib.AsyncExitStack
) -> tuple[dict[str, Page], dict[str, Settle]]:
    """Each layer's page, and what some do after a batch; the apps run (their lifespans) until
    `stack` closes."""
    url = f"redis://127.0.0.1:{spec.redis_port}/0"
    settings = production_settings(url, spec.secret, log)
    app = create_app(settings)
    await stack.enter_async_context(app.router.lifespan_context(app))
    plain, unruled = PlainApp(spec.secret, url), PlainApp(spec.secret, url, rules=False)
    for reference in (plain, unruled):
        await reference.start()
        stack.push_async_callback(reference.stop)
    variables = {"userId": spec.user_id, "first": 20}
    endpoint = asgi_caller(
        app, "/graphql", orjson.dumps({"query": FANS_QUERY, "variables": variables}), spec.token
    )
    await endpoint()  # the document's first run compiles its plan
    executor = app.state.endpoint.executor
    plan = executor.plan(FANS_QUERY, None)
    if not isinstance(plan, Plan) or len(plan.roots) != 1:
        raise RuntimeError("the page's document did not compile to a plan of one root")
    store: FollowStore = app.state.store
    root = plan.roots[0]
    assert root.plan is not None
    user, listed = root.plan, root.plan.lists[0]
    assert listed.columns is not None, "the page's plan builds from columns"
    columns, max_page = listed.columns, executor.schema.limits.max_page_size

    def context() -> Context:
        return Context.create(store, viewer_id=spec.viewer, request_id="layers", max_page_size=max_page)

    # What executor/plan.py's _root_and_list reads and builds, without the plan around it (the answer
    # is checked against B's, so a change there that this misses fails the run).
    async def reads() -> tuple[ListPage, UserColumns]:
        query = store.list_query(listed.kind, spec.user_id, first=20, viewer=spec.viewer, viewer_checked=True)
        [page] = await store.pages([query])
        return page, await store.columns(spec.viewer, [spec.user_id, *page.members], user.with_list)

    async def a_reads() -> bytes:
        return _written_by_hand(spec.viewer, *await reads())

    async def a_store() -> bytes:
        page, read = await reads()
        facts, users = read.split_first()
        data = user.build(facts, {listed.key: columns(page, users)})
        return orjson.dumps({"data": {root.key: data}})

    async def a_plan() -> bytes:
        result = await plan.run(context(), variables, executor.types, executor.schema.limits)
        return orjson.dumps({"data": result.data})

    async def a_executor() -> bytes:
        result = await executor.execute(
            FANS_QUERY, variables=variables, operation_name=None, context=context(), mutations=True
        )
        return orjson.dumps({"data": result.data})

    # The same app with tracing on, its spans exported to a sink in another process.
    tracing = exported_to(stack.enter_context(otlp_sink()))
    traced = create_app(settings, tracing=tracing)
    await stack.enter_async_context(traced.router.lifespan_context(traced))
    document = orjson.dumps({"query": FANS_QUERY, "variables": variables})
    not_sampled, sampled = (
        asgi_caller(traced, "/graphql", document, spec.token, traceparent)
        for traceparent in (NOT_SAMPLED, SAMPLED)
    )
    await sampled()  # its own executor compiles its own plan
    body = orjson.dumps(variables)
    b, b_unruled = (asgi_caller(reference, "/b", body, spec.token) for reference in (plain, unruled))
    pages = (b_unruled, b, a_reads, a_store, a_plan, a_executor, endpoint, not_sampled, sampled)
    return dict(zip(LAYERS, pages, strict=True)), {TRACED[1]: tracing.flush}


_NAME = PROFILE_FIELDS.index("name")
_CREATED_AT = PROFILE_FIELDS.index("createdAt")


def _written_by_hand(viewer: str, page: ListPage, users: UserColumns) -> bytes:
    """The answer to FANS_QUERY from the page and the users' replies (the owner's first), in one
    loop as B writes it: what A store's builders would cost at least."""
    profiles, relations = users.profiles, users.relations
    if profiles is None or relations is None:
        raise RuntimeError("the page's users were read without profiles or relations")
    if profiles[_CREATED_AT] is None:  # the owner is not registered
        return orjson.dumps({"data": {"user": None}})
    out, back = relations
    edges = [
        {
            "cursor": cursor,
            "followedAt": serialize_datetime(at),
            "relationship": "SELF"
            if member == viewer
            else RELATIONSHIPS.get((followed is not None, fan is not None), "NONE"),
            "node": {"userId": member, "name": name},
        }
        for member, at, cursor, followed, fan, name in zip(
            page.members,
            page.times,
            page.cursors,
            out[1:],
            back[1:],
            profiles[PROFILE_WIDTH + _NAME :: PROFILE_WIDTH],
            strict=True,
        )
    ]
    return orjson.dumps({"data": {"user": {"fans": {"edges": edges}}}})


async def measure(spec: LayerSpec) -> list[Layer]:
    with (
        tempfile.TemporaryDirectory(prefix="followgraph-layers-") as tmp,
        (Path(tmp) / "access.log").open("w") as log,
    ):
        async with contextlib.AsyncExitStack() as stack:
            layers, settles = await _layers(spec, log, stack)
            seen = await _turns(spec, layers, settles)
            calls = {name: await _calls_per_page(page) for name, page in layers.items()}
            await asyncio.sleep(0)  # the last access lines, written before their file closes
        logging.shutdown()
    out = []
    for name, values in seen.items():
        values.sort()
        out.append(Layer(name, values[len(values) // 4], values[0], calls[name]))
    return out


async def _turns(
    spec: LayerSpec, layers: dict[str, Page], settles: dict[str, Settle]
) -> dict[str, list[float]]:
    """Every layer's CPU per page in each of `spec.batches` batches, the layers taking turns, once
    their answers are checked against B's."""
    answers = {name: orjson.loads(await page()) for name, page in layers.items()}
    wrong = [name for name, answer in answers.items() if answer != answers["B"]]
    if wrong:
        raise RuntimeError(f"{', '.join(wrong)}: not B's answer")
    for name, page in layers.items():  # warm every path
        await _cpu_per_page(page, BATCH, settles.get(name))
    seen: dict[str, list[float]] = {name: [] for name in layers}
    for _ in range(spec.batches):
        for name, page in layers.items():
            seen[name].append(await _cpu_per_page(page, BATCH, settles.get(name)))
    return seen


# Pages counted under callgrind; and run before counting, so that every cache is warm.
COUNTED_PAGES = 400
WARM_PAGES = 200


def instructions(spec: LayerSpec) -> dict[str, float]:
    """Each layer's instructions a page under callgrind; {} when valgrind is not installed."""
    if not callgrind.available():
        return {}
    args = ["bench.layers", "--instructions"]
    return {
        name: callgrind.count(name, [*args, name, str(COUNTED_PAGES)], spec.to_json()) / COUNTED_PAGES
        for name in LAYERS
    }


async def _counted(spec: LayerSpec, name: str, pages: int) -> None:
    """The pages of one layer that callgrind counts, once the parent has turned it on."""
    with (
        tempfile.TemporaryDirectory(prefix="followgraph-layers-") as tmp,
        (Path(tmp) / "access.log").open("w") as log,
    ):
        async with contextlib.AsyncExitStack() as stack:
            layers, settles = await _layers(spec, log, stack)
            page, settle = layers[name], settles.get(name)
            for _ in range(WARM_PAGES):
                await page()
            print("ready", flush=True)
            sys.stdin.readline()
            for _ in range(pages):
                await page()
            if settle is not None:
                settle()
            os._exit(0)  # counted to here: nothing of the shutdown


def main() -> None:
    if sys.argv[1:2] == ["--instructions"]:
        spec = LayerSpec(**json.loads(sys.stdin.readline()))
        uvloop.run(_counted(spec, sys.argv[2], int(sys.argv[3])))
        return
    spec = LayerSpec(**json.loads(sys.stdin.read()))
    layers = uvloop.run(measure(spec))
    counted = instructions(spec)
    print(json.dumps([{**asdict(layer), "instructions": counted.get(layer.name, 0.0)} for layer in layers]))


if __name__ == "__main__":
    main()
