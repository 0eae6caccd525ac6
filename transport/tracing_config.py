"""Turning tracing on: off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.

Set (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), each server process configures OpenTelemetry's SDK as
its own variables say (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and its
_ARG, OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS...) and exports its spans (transport/tracing.py) in
batches over OTLP/HTTP with protobuf. Unset, the SDK's tracing and the exporter are not even
imported.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Mapping

from opentelemetry import trace

from followgraph.transport.tracing import Tracing

log = logging.getLogger(__name__)

# Either turns tracing on (the second names the traces' endpoint alone).
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
PROTOCOL = "http/protobuf"
# service.name unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say another.
SERVICE_NAME = "followgraph"


class TracingConfigError(ValueError):
    """An OTEL_* variable asks for what this server cannot do; the message names it."""


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether `environ` turns tracing on (an OTLP endpoint, and the SDK not disabled)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def check_config(environ: Mapping[str, str]) -> None:
    """TracingConfigError when `environ` asks for tracing this server cannot export."""
    if not wanted(environ):
        return
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        raise TracingConfigError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OpenTelemetry SDK is not installed: "
            "pip install 'followgraph[tracing]' (or unset the variable)."
        )
    for name in PROTOCOL_VARIABLES:
        protocol = environ.get(name, "").strip()
        if protocol:
            if protocol != PROTOCOL:
                raise TracingConfigError(
                    f"{name}={protocol}: spans are exported over {PROTOCOL} only "
                    f"(unset it, or set it to {PROTOCOL} and point {ENDPOINT_VARIABLES[0]} at the "
                    "collector's OTLP/HTTP port, 4318 by default)."
                )
            return


def tracing_from_env(environ: Mapping[str, str] | None = None) -> Tracing | None:
    """Tracing as the OTEL_* variables say, the process's global tracer provider from now on; None
    when they leave it off (nothing is configured)."""
    environ = os.environ if environ is None else environ
    if not wanted(environ):
        return None
    check_config(environ)
    # Imported only here: a server without tracing does not pay their start-up.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    # The SDK reads the variables itself: the resource's, the sampler's, the batches', the exporter's.
    resource = Resource.create()
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    log.info("tracing on: spans of %s exported over OTLP/HTTP", resource.attributes.get("service.name"))
    return Tracing(provider)
