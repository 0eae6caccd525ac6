"""Tracing exported for real: `followgraph serve`, with OTEL_EXPORTER_OTLP_ENDPOINT pointed at an
OTLP/HTTP receiver (a small http.server here, reading the protobuf bodies with opentelemetry-proto
as a collector does), sends it the spans of its requests in the callers' traces, their Redis round
trips and the SQL copy's batches."""

from __future__ import annotations

import asyncio
import gzip
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from followgraph.server.redis_client import connect
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.store import FollowStore
from followgraph.transport.auth import mint_token
from tests.conftest import TEST_SECRET
from tests.server.processes import clean_env, serve

FOLLOW_TRACE, READ_TRACE = "5bf92f3577b34da6a3ce929d0e0e4736", "6bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@dataclass
class Exported:
    """A span as the receiver got it, with its service's name."""

    service: str
    span: Span

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def attributes(self) -> dict[str, Any]:
        return _values(self.span.attributes)


def _values(pairs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        kind = pair.value.WhichOneof("value")
        out[pair.key] = getattr(pair.value, kind) if kind else None
    return out


@dataclass
class Receiver:
    """What an OTLP/HTTP collector received on /v1/traces."""

    url: str = ""
    spans: list[Exported] = field(default_factory=list)
    posts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        with self.lock:
            self.posts += 1
            for resource_spans in request.resource_spans:
                service = str(_values(resource_spans.resource.attributes).get("service.name"))
                for scope_spans in resource_spans.scope_spans:
                    self.spans += [Exported(service, span) for span in scope_spans.spans]

    def wait_for(self, check: Any, timeout: float = 20.0) -> list[Exported]:
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                found = [s for s in self.spans if check(s)]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.05)


@contextmanager
def receiver() -> Iterator[Receiver]:
    received = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or self.headers["content-type"] != "application/x-protobuf":
                self.send_error(404)
                return
            received.add(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


def _post(url: str, token: str, query: str, traceparent: str | None = None) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {token}"}
    if traceparent is not None:
        headers["traceparent"] = traceparent
    response = httpx.post(f"{url}/graphql", json={"query": query}, headers=headers, timeout=10)
    body: dict[str, Any] = response.json()
    assert response.status_code == 200 and "errors" not in body, body
    return body


def test_serve_exports_its_spans_to_an_otlp_http_receiver(tmp_path: Path) -> None:
    auth = Settings(data_dir=tmp_path / "data", jwt_secret=TEST_SECRET).auth_config()
    admin, ann = mint_token(auth, "admin", admin=True), mint_token(auth, "ann")
    with receiver() as received:
        env = {
            "OTEL_EXPORTER_OTLP_ENDPOINT": received.url,
            "OTEL_SERVICE_NAME": "followgraph-under-test",
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "FOLLOWGRAPH_JWT_SECRET": TEST_SECRET,
        }
        with serve(tmp_path, env=env) as server:
            for user in ("ann", "bob"):
                upsert = f'mutation {{ upsertUser(input: {{userId: "{user}"}}) {{ errors {{ code }} }} }}'
                _post(server.url, admin, upsert)
            _post(
                server.url,
                ann,
                'mutation Follow { follow(input: {userId: "bob"}) { changed } }',
                f"00-{FOLLOW_TRACE}-{CALLER_SPAN}-01",
            )
            _post(
                server.url,
                ann,
                'query Fans { user(userId: "bob") { fans(first: 5) { edges { node { userId } } } } }',
                f"00-{READ_TRACE}-{CALLER_SPAN}-01",
            )
            client = Span.SPAN_KIND_CLIENT
            read = received.wait_for(lambda s: s.trace_id == READ_TRACE and s.span.kind == client)
            written = received.wait_for(lambda s: s.trace_id == FOLLOW_TRACE and s.span.kind == client)
            batches = received.wait_for(lambda s: s.span.name == "sql batch")
        log = server.log()  # the access lines held, written as the server stopped
    assert read and written and batches, [(s.span.name, s.trace_id) for s in received.spans]
    assert {s.service for s in received.spans} == {"followgraph-under-test"}

    in_read = [s for s in received.spans if s.trace_id == READ_TRACE]
    [request] = [s for s in in_read if s.span.kind == Span.SPAN_KIND_SERVER]
    assert request.span.name == "POST /graphql" and request.span.parent_span_id.hex() == CALLER_SPAN
    [operation] = [s for s in in_read if s.span.parent_span_id == request.span.span_id]
    assert operation.span.name == "query Fans"
    assert operation.attributes["followgraph.graphql.executor"] == "strawberry"
    assert all(s.span.parent_span_id == operation.span.span_id for s in read)
    assert {s.attributes["followgraph.redis.via"] for s in read} == {"read_channel"}
    # The follow's script and its payload's reads went through redis-py's client.
    assert "redis_py" in {s.attributes["followgraph.redis.via"] for s in written}
    assert {s.attributes["db.system.name"] for s in batches} == {"sqlite"}
    # The access lines carry the callers' trace ids.
    assert f'"trace_id":"{READ_TRACE}"' in log and f'"trace_id":"{FOLLOW_TRACE}"' in log


def test_followgraph_sync_exports_its_batches(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:

        async def changes() -> None:
            client = connect(redis.url)
            try:
                store = FollowStore(client)
                for user in ("ann", "bob"):
                    await store.upsert_user(user, name=user.title())
                await store.follow(follower="ann", followee="bob")
            finally:
                await client.aclose()

        asyncio.run(changes())
        with receiver() as received:
            env = clean_env(
                OTEL_EXPORTER_OTLP_ENDPOINT=received.url,
                OTEL_SERVICE_NAME="followgraph-sync-under-test",
                OTEL_BSP_SCHEDULE_DELAY="100",
                FOLLOWGRAPH_REDIS_URL=redis.url,
                FOLLOWGRAPH_DATA_DIR=str(tmp_path / "data"),
                FOLLOWGRAPH_DATABASE_URL=f"sqlite:///{tmp_path / 'copy.sqlite3'}",
            )
            command = [sys.executable, "-m", "followgraph.cli", "sync", "--consumer", "traced"]
            process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                batches = received.wait_for(lambda s: s.span.name == "sql batch")
            finally:
                process.send_signal(signal.SIGINT)
                output, _ = process.communicate(timeout=30)
    finally:
        redis.stop()
    assert batches, output.decode(errors="replace")[-2000:]
    assert {s.service for s in batches} == {"followgraph-sync-under-test"}
    assert sum(s.attributes["followgraph.sql.events"] for s in batches) >= 3
    assert {s.attributes["db.system.name"] for s in batches} == {"sqlite"}
