"""The request metrics (transport/metrics.py): counted in plain lists in one process, through
prometheus-client's shared values with several."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from followgraph.transport.metrics import LATENCY_BUCKETS, MULTIPROC_ENV, Metrics

# On, between and beyond the bounds: a latency equal to a bound counts in that bound's bucket.
LATENCIES = [0.0, 0.0004, 0.001, 0.0011, 0.0025, 0.003, 0.05, 0.7, 1.0, 9.99, 10.0, 10.5, 120.0]


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The request metrics' samples of an exposition, by name and labels (`_created` left out:
    a time, not a count)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("followgraph_request") and not sample.name.endswith("_created"):
                out[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_the_counts_expose_what_prometheus_client_s_own_counter_and_histogram_would() -> None:
    metrics = Metrics()
    reference = CollectorRegistry()
    requests = Counter("followgraph_requests", "-", ["operation", "outcome"], registry=reference)
    latency = Histogram(
        "followgraph_request_duration_seconds",
        "-",
        ["operation"],
        buckets=LATENCY_BUCKETS,
        registry=reference,
    )
    for n, seconds in enumerate(LATENCIES):
        for operation, outcome in [
            ("Fans", "ok"),
            ("Fans", "error" if n % 3 else "ok"),
            ("unnamed", "rejected"),
        ]:
            metrics.observe_request(operation, outcome, seconds)
            requests.labels(operation, outcome).inc()
            latency.labels(operation).observe(seconds)

    ours = samples(metrics.render().decode())
    assert ours == samples(generate_latest(reference).decode())
    assert ours["followgraph_requests_total", (("operation", "Fans"), ("outcome", "ok"))] == 18
    assert ours["followgraph_request_duration_seconds_bucket", (("le", "0.001"), ("operation", "Fans"))] == 6
    assert ours["followgraph_request_duration_seconds_bucket", (("le", "+Inf"), ("operation", "Fans"))] == 26


def test_a_series_says_when_it_was_first_counted() -> None:
    metrics = Metrics()
    metrics.observe_request("Fans", "ok", 0.01)
    created = [
        sample
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
        if sample.name == "followgraph_requests_created"
    ]
    assert [sample.labels for sample in created] == [{"operation": "Fans", "outcome": "ok"}]
    assert created[0].value > 1.7e9


def test_scrapes_from_another_thread_while_requests_are_counted_lose_nothing() -> None:
    metrics = Metrics()
    stop = threading.Event()
    failures: list[BaseException] = []

    def scrape() -> None:
        while not stop.is_set():
            try:
                samples(metrics.render().decode())
            except BaseException as exc:  # reported below, in the test's thread
                failures.append(exc)
                return

    thread = threading.Thread(target=scrape)
    thread.start()
    try:
        for n in range(20_000):
            metrics.observe_request(f"Op{n % 150}", "ok", n / 10_000)  # new series as it scrapes
    finally:
        stop.set()
        thread.join()
    assert failures == []
    final = samples(metrics.render().decode())
    counted = [value for (name, _), value in final.items() if name == "followgraph_requests_total"]
    assert len(counted) == 150 and sum(counted) == 20_000


def test_with_several_workers_the_counts_go_where_every_worker_s_are_added_up(tmp_path: Path) -> None:
    # prometheus-client chooses its shared values when imported: a process of its own.
    program = """
from followgraph.transport.metrics import Metrics
metrics = Metrics()
metrics.observe_request("Fans", "ok", 0.003)
metrics.observe_request("Fans", "ok", 0.2)
"""
    env = {**os.environ, MULTIPROC_ENV: str(tmp_path)}
    for _ in range(2):  # two workers, one after the other
        subprocess.run([sys.executable, "-c", program], env=env, check=True, timeout=60)
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from followgraph.transport.metrics import Metrics; print(Metrics().render().decode())",
        ],
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    ).stdout
    counted = samples(shown)
    assert counted["followgraph_requests_total", (("operation", "Fans"), ("outcome", "ok"))] == 4
    assert (
        counted["followgraph_request_duration_seconds_bucket", (("le", "0.005"), ("operation", "Fans"))] == 2
    )


def test_an_operation_label_is_its_name_bounded() -> None:
    metrics = Metrics()
    assert metrics.operation("Fans") == "Fans"
    # No name: "unnamed" says so, where "anonymous" read as a request without a token.
    assert metrics.operation(None) == metrics.operation("") == "unnamed"
    assert metrics.operation("not a name") == "other"
