"""Tracing for the benchmark's traced layers (bench/layers.py): the server's own tracing
(transport/tracing.py) with the SDK's batches exported over OTLP/HTTP, as in production, to a sink
in a process of its own that reads every request and answers 200 (a collector that keeps nothing):
what the server spends on its spans, encoding and sending them included, counts in the measured
process, and nothing of the collector's does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from followgraph.transport.tracing import Tracing

# A caller's trace context, as a gateway sends it: sampled (01) or not (00).
SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
NOT_SAMPLED = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
# Spans a batch of pages may queue before they are exported (the SDK's default, 2048, would drop
# some of a batch of 480 pages of 4 spans before its worker catches up: dropped spans cost nothing).
QUEUE = 16_384

# The sink stops when its standard input closes: with the process that started it, however that
# process ends (bench/layers.py leaves the pages it counts under callgrind with os._exit).
_SINK = """
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
threading.Thread(target=server.serve_forever, daemon=True).start()
print(server.server_address[1], flush=True)
sys.stdin.read()
"""


@contextmanager
def otlp_sink() -> Iterator[str]:
    """The base URL of an OTLP/HTTP sink running until the block ends."""
    sink = subprocess.Popen(
        [sys.executable, "-c", _SINK],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert sink.stdout is not None
        yield f"http://127.0.0.1:{int(sink.stdout.readline())}"
    finally:
        sink.kill()
        sink.wait()


def exported_to(sink: str) -> Tracing:
    """Tracing as the server's is with OTEL_EXPORTER_OTLP_ENDPOINT set to `sink` (the default
    sampler, parentbased_always_on: the caller's flag decides), without touching the process's
    global provider."""
    provider = TracerProvider()
    exporter = OTLPSpanExporter(endpoint=f"{sink}/v1/traces")
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=QUEUE))
    return Tracing(provider)
