"""The figures as tables: rich on stdout, Markdown in bench/benchmarks.md, JSON in bench/results/."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

from bench.clients import HEADERS as CLIENT_HEADERS
from bench.clients import client_notes, client_rows
from bench.eventlog import (
    CATCH_UP_HEADERS,
    DRAIN_HEADERS,
    FOLLOWS_EACH,
    NOTES,
    catch_up_rows,
    drain_rows,
)
from bench.eventlog_results import EventLogResults
from bench.imports import import_notes, import_rows
from bench.layers import Layer
from bench.lifecycle import lifecycle_notes, lifecycle_rows
from bench.model import Group, MemoryRow, Row
from bench.replica_pages import HEADERS as REPLICA_PAGE_HEADERS
from bench.replica_pages import RATIO_HEADERS as REPLICA_PAGE_RATIO_HEADERS
from bench.replica_pages import page_notes, page_ratio_notes, page_ratio_rows, page_rows
from bench.replicated import HEADERS as REPLICATED_HEADERS
from bench.replicated import RATIO_HEADERS as REPLICATED_RATIO_HEADERS
from bench.replicated import (
    ReplicatedResults,
    replicated_notes,
    replicated_ratio_notes,
    replicated_ratio_rows,
    replicated_rows,
)
from bench.subscription_results import SubscriptionResults
from bench.subscriptions import (
    DELIVERY_HEADERS,
    MEMORY_HEADERS,
    delivery_notes,
    delivery_rows,
    memory_notes,
    memory_rows,
)
from bench.suite import Results

BENCH_DIR = Path(__file__).resolve().parent
PACKAGES = ("redis", "hiredis", "strawberry-graphql", "starlette", "uvicorn", "uvloop", "httptools", "orjson")


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    numeric_from: int = 1  # columns from this one on are right-aligned


def _package(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment(results: Results, wall_seconds: float) -> dict[str, str]:
    cpus = os.cpu_count() or 0
    env = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{cpus} CPUs ({len(os.sched_getaffinity(0))} usable), {_cpu_model()}",
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "redis server": f"{results.redis_version} ({results.redis_allocator})",
    }
    env.update({name: _package(name) for name in PACKAGES})
    env["Node peer"] = results.node_peer or "not started"
    env["load generator"] = results.loader
    env["CPU pinning"] = results.layout.describe()
    opts = results.options
    env["run"] = (
        f"{'quick' if opts.quick else 'full'}: {opts.warmup:g}s warm-up + {opts.duration:g}s per scenario, "
        f"{opts.concurrency} connections, HTTP/1.1 keep-alive over 127.0.0.1"
    )
    env["load average before the run"] = results.loadavg_start
    env["wall time"] = f"{wall_seconds:.0f}s"
    return env


def _ms(value: float) -> str:
    return f"{value:.2f}"


def _opt(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def scenario_table(group: Group) -> Table:
    table = Table(
        group.title,
        [
            "scenario",
            "req/s",
            "p50 ms",
            "p99 ms",
            "server CPU ms/req",
            "round trips/req",
            "Redis cmds/req",
            "write cmds/req",
            "changes/req",
            "Redis µs/req",
            "Redis CPU µs/req",
            "errors",
            "others' CPU %",
        ],
        notes=[*group.notes, OTHERS_NOTE, REDIS_NOTE],
    )
    for row in group.rows:
        table.rows.append(_scenario_cells(row))
    table.notes[:0] = [f"{row.name}: {row.note}." for row in group.rows if row.note]
    return table


OTHERS_NOTE = (
    "server CPU ms/req: CPU time of the process under test (server, or the harness for the script "
    "loop) per request, warm-up included; unlike req/s it hardly depends on what else runs. "
    "others' CPU %: CPU time that processes outside the harness took during the scenario, in % of "
    "one core (this machine is shared); a high value means that row's req/s and latencies are disturbed."
)


REDIS_NOTE = (
    "Redis µs/req: time in commands per request, as INFO commandstats counts it (a script's time "
    "includes the commands it runs, which are counted again on their own). Redis CPU µs/req: the "
    "Redis server's own CPU time per request (INFO cpu, user and system, summed over a cluster's "
    "nodes): its commands, and reading, parsing and answering them."
)


def _scenario_cells(row: Row) -> list[str]:
    load, work = row.load, row.work
    return [
        row.name,
        f"{load.rps:,.0f}",
        _ms(load.p50_ms),
        _ms(load.p99_ms),
        "-" if row.server_cpu_ms is None else f"{row.server_cpu_ms:.2f}",
        _opt(row.round_trips),
        f"{work.commands_per_request:.1f}",
        f"{work.write_commands_per_request:.1f}",
        f"{work.changes_per_request:.1f}",
        f"{work.usec_per_request:.0f}",
        f"{work.cpu_usec_per_request:.0f}",
        str(load.errors + load.connection_errors),
        "-" if row.other_cpu is None else f"{row.other_cpu:.0f}",
    ]


def layers_table(layers: list[Layer]) -> Table:
    b = next(layer for layer in layers if layer.name == "B")
    table = Table(
        "Where A's CPU goes: the side-by-side page in process, layer by layer, beside B",
        [
            "layer",
            "CPU µs a page",
            "fastest batch µs",
            "/ B",
            "beyond the row above, µs",
            "calls a page",
            "/ B",
            "instructions a page",
            "/ B",
        ],
    )
    above: float | None = None
    for layer in layers:
        # round(...) + 0.0: no "-0.0" for a difference within a rounding of nothing.
        beyond = "" if above is None else f"{round(layer.quartile_us - above, 1) + 0.0:.1f}"
        ratio = f"{layer.quartile_us / b.quartile_us:.2f}"
        calls = [f"{layer.calls:.0f}", f"{layer.calls / b.calls:.2f}"] if b.calls else ["-", "-"]
        counted = (
            [f"{layer.instructions / 1000:,.0f}k", f"{layer.instructions / b.instructions:.2f}"]
            if b.instructions and layer.instructions
            else ["-", "-"]
        )
        table.rows.append(
            [layer.name, f"{layer.quartile_us:.1f}", f"{layer.min_us:.1f}", ratio, beyond, *calls, *counted]
        )
        above = layer.quartile_us
    table.notes += [
        "bench/layers.py, pinned to the servers' CPU: each row answers the same page (checked equal to "
        "B's answer) in one process on uvloop, 32 pages at a time, the rows taking turns in batches of "
        "480 pages; CPU time a page, each row's fastest quarter of batches. B without the rules is B "
        "with the owner's settings and blocks left out of its PAGE call (what they cost B is B's "
        "beyond). Each A row adds to the one above it: A reads is A's reads alone (list query, PAGE, "
        "the users' columns) with the answer written by hand in one loop, as B writes its own; A "
        "store, the same reads with the compiled plan's builders (the root user's facts, the "
        "connection's columns, orjson); A plan, the plan's "
        "run with a request's context (variables, arguments, the root and its list); A executor, the "
        "plan found by its "
        "document; A endpoint, the whole /graphql ASGI app (headers, request id, body, token, "
        "deadline, metrics, the access line); A endpoint, traced, the same app with tracing on "
        "(exported over OTLP/HTTP to a sink in another process, bench/tracing.py), its requests "
        "carrying a caller's traceparent, not sampled (what every request pays for tracing being on) "
        "then sampled (its spans made, encoded and sent, all of a batch's before its CPU time is "
        "read). Beyond the row above: what the row adds to the one "
        "above it (for A reads, what A's own reads cost beyond the whole of B; for A store, what the "
        "builders cost beyond an answer written by hand).",
        "HTTP parsing and the client's sockets are in no row: both servers run on the same uvicorn, and "
        "over HTTP each page also costs what they cost, the same for both.",
        "Calls a page: the Python function and builtin calls of one page, as cProfile counts them over "
        "256 pages one after the other. Unlike the CPU time it is the same in every run of the same "
        "code, whatever else the machine does, so a change to a layer shows in it exactly.",
        "Instructions a page: counted by valgrind's callgrind over 400 pages one after the other, after "
        "200 uncounted ones (`-` without valgrind). Steady to a few in ten thousand from run to run "
        "whatever else the machine does, it is the figure to judge a change of a few per cent by; it "
        "counts the process's own instructions, not the kernel's (system calls) nor cache misses.",
    ]
    return table


def command_mix_table(groups: list[Group]) -> Table:
    table = Table("Redis commands of one request, on average (INFO commandstats)", ["scenario", "commands"])
    table.numeric_from = 2
    seen: set[int] = set()
    for group in groups:
        for row in group.rows:
            if id(row.work) in seen:
                continue
            seen.add(id(row.work))
            table.rows.append([row.name, row.work.mix(8)])
    table.notes.append(
        "Commands run inside Lua scripts are counted as well as the EVALSHA itself. changes/req is "
        "rdb_changes_since_last_save per request (keys or elements written)."
    )
    return table


def memory_table(rows: list[MemoryRow]) -> Table:
    table = Table(
        "Redis memory per edge: INFO used_memory growth while loading a typical graph",
        [
            "Redis",
            "users",
            "edges",
            "mutual pairs",
            "following B/edge",
            "fans B/edge",
            "both directions B/edge",
            "mutual B/edge",
            "all sets B/edge",
            "profiles B/user",
        ],
    )
    for m in rows:
        table.rows.append(
            [
                m.redis,
                f"{m.users:,}",
                f"{m.edges:,}",
                f"{m.mutual_pairs:,}",
                f"{m.per_edge(m.following):.1f}",
                f"{m.per_edge(m.fans):.1f}",
                f"{m.per_edge(m.following + m.fans):.1f}",
                f"{m.per_edge(m.mutual):.1f}",
                f"{m.per_edge(m.sets):.1f}",
                f"{m.profiles / m.users if m.users else 0:.1f}",
            ]
        )
    table.notes.append(
        "Each user follows 10 others: 3 in a community of 20 (which makes the mutual pairs), 3 popular "
        "accounts (Zipf), 4 at random. Stages: following sets, then fans sets, then mutual sets, then "
        "profile hashes; each figure is the growth of used_memory in its stage, divided by the edges "
        "(mutual: also per edge, though only mutual pairs have entries)."
    )
    return table


def tables(results: Results, wall_seconds: float) -> list[Table]:
    out: list[Table] = []
    env = Table("Environment", ["", ""], [[k, v] for k, v in environment(results, wall_seconds).items()])
    env.numeric_from = 2
    env.notes.append(
        "This machine has 2 cores: the load generator competes with the server for CPU, and Redis "
        "shares a core with the load generator. Absolute figures are modest; the ratios between "
        "scenarios of the same run are the point."
    )
    out.append(env)
    if results.load is not None:
        load = results.load
        out.append(
            Table(
                "Bulk load (raw ZADD/HSET pipelines, ~10k commands per round trip)",
                ["users", "edges", "commands", "round trips", "seconds", "edges/s"],
                [
                    [
                        f"{load.users:,}",
                        f"{load.edges:,}",
                        f"{load.commands:,}",
                        f"{load.round_trips:,}",
                        f"{load.seconds:.1f}",
                        f"{load.edges_per_second:,.0f}",
                    ]
                ],
                numeric_from=0,
            )
        )
    checks = Table("Checks (before the load)", ["check", "result"])
    checks.numeric_from = 2
    checks.rows = [[k, str(v)] for k, v in results.checks.items()]
    out.append(checks)
    out += [scenario_table(g) for g in results.groups]
    if results.layers:
        out.append(layers_table(results.layers))
    if results.eventlog is not None:
        out += eventlog_tables(results.eventlog)
    if results.subscriptions is not None:
        out += subscription_tables(results.subscriptions)
    if results.lifecycle is not None:
        out.append(
            Table(
                "Account deletion: a celebrity deleted for good while other users' pages are served",
                [
                    "load",
                    "page p99 ms (median / worst window)",
                    "req/s",
                    "deletion s",
                    "deletion Redis CPU s",
                ],
                lifecycle_rows(results.lifecycle),
                notes=lifecycle_notes(results.lifecycle),
            )
        )
    if results.imports is not None:
        out.append(
            Table(
                "Bringing a graph over: followgraph import and export beside raw ZADDs and the least script",
                ["command", "seconds", "follows/s", "of the raw rate"],
                import_rows(results.imports),
                notes=import_notes(results.imports),
            )
        )
    if results.replicated is not None:
        out += replicated_tables(results.replicated)
    if results.clients is not None:
        out.append(
            Table(
                "Well-kept libraries against FollowGraph's transport: Valkey GLIDE against the read "
                "channel, granian against uvicorn with the protocol guards (fans page)",
                CLIENT_HEADERS,
                client_rows(results.clients),
                notes=client_notes(results.clients),
                numeric_from=2,
            )
        )
    if results.groups:
        out.append(command_mix_table(results.groups))
    if results.ratios:
        out.append(
            Table(
                "Ratios (same run)",
                ["ratio", "value", "from"],
                [[r.name, f"{r.value:.2f}", r.detail] for r in results.ratios],
            )
        )
    if results.memory:
        out.append(memory_table(results.memory))
    if results.profile:
        prof = Table("py-spy profile of server A under the fans-page load", ["", ""])
        prof.numeric_from = 2
        prof.rows = [[line, ""] for line in results.profile]
        out.append(prof)
    return out


def eventlog_tables(results: EventLogResults) -> list[Table]:
    catch_up = Table(
        "Event log: the SQL consumer's lag under the mutation load, and its catch-up "
        f"({results.on_database})",
        list(CATCH_UP_HEADERS),
        catch_up_rows(results),
        notes=list(results.notes),
    )
    catch_up.notes.append(
        "Events written: XADD calls in the round (warm-up included); events per batch: events "
        "written / XACK calls (one per batch applied). Max lag: unacknowledged events "
        "of group `sql`, sampled every 0.25 s during the round. Lag when the load stopped: "
        "EventLog.lag as soon as the load generator finished; catch-up: from then until the group "
        "had acknowledged every event (XINFO polled every 10 ms), with the server's CPU time meanwhile."
    )
    drains = Table(
        f"Event log: one consumer draining a pre-filled log into each database (batch {results.batch})",
        list(DRAIN_HEADERS),
        drain_rows(results),
        notes=[
            f"The log: {results.prefilled:,} FOLLOW events, written by store.bulk.follow_many in "
            f"{results.prefill_seconds:.1f}s ({FOLLOWS_EACH} follows by each user, no follow back).",
            *NOTES,
        ],
    )
    out = [catch_up, drains]
    if results.profile:
        prof = Table(
            "py-spy profile of server A with the SQL consumer on (PostgreSQL), under the mutation load",
            ["", ""],
        )
        prof.numeric_from = 2
        prof.rows = [[line, ""] for line in results.profile]
        out.append(prof)
    return out


def replicated_tables(results: ReplicatedResults) -> list[Table]:
    figures = Table(
        "Writes that wait for a replica: follow/unfollow mutations through A with "
        "FOLLOWGRAPH_WRITE_REPLICAS=1 and 0, taking turns",
        REPLICATED_HEADERS,
        replicated_rows(results),
        notes=replicated_notes(results),
        numeric_from=2,
    )
    ratios = Table(
        "Writes that wait for a replica: WRITE_REPLICAS=1 over 0, by round",
        REPLICATED_RATIO_HEADERS,
        replicated_ratio_rows(results),
        notes=replicated_ratio_notes(),
    )
    out = [figures, ratios]
    if results.pages.settings:
        out.append(
            Table(
                "Reads from replicas: a celebrity's fans page through A with "
                "FOLLOWGRAPH_READ_FROM_REPLICAS=0 and 1, taking turns, each Redis measured on its own",
                REPLICA_PAGE_HEADERS,
                page_rows(results.pages),
                notes=page_notes(results.pages),
                numeric_from=1,
            )
        )
        out.append(
            Table(
                "Reads from replicas: READ_FROM_REPLICAS=1 over 0, by round",
                REPLICA_PAGE_RATIO_HEADERS,
                page_ratio_rows(results.pages),
                notes=page_ratio_notes(),
            )
        )
    return out


def subscription_tables(results: SubscriptionResults) -> list[Table]:
    delivery = Table(
        f"Subscriptions: viewerEvents delivery latency with {results.subscribers:,} subscribers, "
        "follows through HTTP at a steady rate",
        list(DELIVERY_HEADERS),
        delivery_rows(results),
        notes=delivery_notes(results),
    )
    memory = Table(
        "Subscriptions: server memory per idle viewerEvents subscription, and Redis beside it",
        list(MEMORY_HEADERS),
        memory_rows(results),
        notes=memory_notes(results),
    )
    return [delivery, memory]


def print_tables(console: Console, items: list[Table]) -> None:
    for t in items:
        rich = RichTable(title=t.title, title_justify="left", show_lines=False)
        for i, header in enumerate(t.headers):
            rich.add_column(header, justify="right" if i >= t.numeric_from else "left", overflow="fold")
        for row in t.rows:
            rich.add_row(*row)
        console.print(rich)
        for note in t.notes:
            console.print(f"[dim]{note}[/dim]")
        console.print()


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(items: list[Table], results: Results) -> str:
    lines = [
        "# FollowGraph benchmarks",
        "",
        "Written by `make bench` (`python -m bench`); overwritten on every run. Not a test: nothing "
        "here is asserted. Machine-readable results are in `bench/results/`.",
        "",
    ]
    for t in items:
        lines += [f"## {t.title}", ""]
        if t.title.startswith("py-spy"):
            lines += ["```", *(row[0] for row in t.rows), "```", ""]
            continue
        lines.append("| " + " | ".join(_md_cell(h) for h in t.headers) + " |")
        aligns = ["---:" if i >= t.numeric_from else "---" for i in range(len(t.headers))]
        lines.append("| " + " | ".join(aligns) + " |")
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
        lines.append("")
        for note in t.notes:
            lines += [note, ""]
    return "\n".join(lines)


def to_json(results: Results, wall_seconds: float) -> dict[str, Any]:
    return {
        "environment": environment(results, wall_seconds),
        "options": asdict(results.options),
        "load": None
        if results.load is None
        else {**asdict(results.load), "edges_per_second": results.load.edges_per_second},
        "checks": results.checks,
        "groups": [
            {
                "key": g.key,
                "title": g.title,
                "rows": [r.to_json() for r in g.rows],
                "notes": g.notes,
                "rounds": {name: [r.to_json() for r in rows] for name, rows in g.rounds.items()},
            }
            for g in results.groups
        ],
        "ratios": [asdict(r) for r in results.ratios],
        "memory": [
            {
                **asdict(m),
                "bytes_per_edge": {
                    "following": m.per_edge(m.following),
                    "fans": m.per_edge(m.fans),
                    "both_directions": m.per_edge(m.following + m.fans),
                    "mutual": m.per_edge(m.mutual),
                    "all_sets": m.per_edge(m.sets),
                },
                "profile_bytes_per_user": m.profiles / m.users if m.users else 0,
            }
            for m in results.memory
        ],
        "profile": results.profile,
        "layers": [asdict(layer) for layer in results.layers],
        "eventlog": None
        if results.eventlog is None
        else {
            **asdict(results.eventlog),
            "drain_events_per_second": {d.database: d.events_per_second for d in results.eventlog.drains},
        },
        "subscriptions": None
        if results.subscriptions is None
        else {
            **asdict(results.subscriptions),
            "achieved_follows_per_second": [d.achieved_rate for d in results.subscriptions.deliveries],
            "kb_per_subscription": {
                s.label: results.subscriptions.per_subscription_kb(s)
                for s in results.subscriptions.memory
                if s.subscriptions
            },
        },
        "lifecycle": None if results.lifecycle is None else asdict(results.lifecycle),
        "imports": None if results.imports is None else asdict(results.imports),
        "replicated": None if results.replicated is None else asdict(results.replicated),
        "clients": None if results.clients is None else asdict(results.clients),
    }


def write(results: Results, wall_seconds: float, console: Console) -> tuple[Path, Path]:
    items = tables(results, wall_seconds)
    print_tables(console, items)
    out_dir = BENCH_DIR / "results"
    out_dir.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    opts = results.options
    suffix = ("-quick" if opts.quick else "") + ("-eventlog" if opts.eventlog_only else "")
    suffix += "-subscriptions" if opts.subscriptions_only else ""
    suffix += "-lifecycle" if opts.lifecycle_only else ""
    suffix += "-imports" if opts.imports_only else ""
    suffix += "-clients" if opts.clients_only else ""
    suffix += "-replicated" if opts.replicated_only else ""
    suffix += "-cluster" if opts.cluster_only else ""
    json_path = out_dir / f"bench-{stamp}{suffix}.json"
    json_path.write_text(json.dumps(to_json(results, wall_seconds), indent=2, default=str) + "\n")
    # The committed report records full runs; a --quick try-out or a single section writes its
    # Markdown beside the JSON.
    partial = (
        opts.quick
        or opts.eventlog_only
        or opts.subscriptions_only
        or opts.lifecycle_only
        or opts.imports_only
    )
    partial = partial or opts.cluster_only or opts.clients_only or opts.replicated_only
    partial = partial or bool(opts.scenarios)
    md_path = json_path.with_suffix(".md") if partial else BENCH_DIR / "benchmarks.md"
    md_path.write_text(markdown(items, results))
    return json_path, md_path
