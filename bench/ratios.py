"""The ratios the report leads with, computed from the groups of rows and the memory figures of a run."""

from __future__ import annotations

import dataclasses

from bench.eventlog import API_NO_LOG, API_OFF, API_ON, SCRIPT_WITH, SCRIPT_WITHOUT
from bench.model import Group, MemoryRow, Ratio, Row

# The rows of the "versus" group by their first letter: what A is compared with.
REFERENCES = {"B": "plain Python (B)", "N": "Node peer", "C": "C", "D": "D"}


def ratios(groups_list: list[Group], memory: list[MemoryRow]) -> list[Ratio]:
    """Every ratio whose rows the run has, side by side in the same run."""
    groups = {g.key: g for g in groups_list}
    out: list[Ratio] = []
    if "versus" in groups:
        rows = groups["versus"].rows
        a = rows[0]
        for other in rows[1:]:
            against = REFERENCES.get(other.name[0], other.name[0])
            out.append(_throughput(f"A / {against} throughput", a, other))
            if a.server_cpu_ms and other.server_cpu_ms:
                out.append(
                    Ratio(
                        f"A / {against} server CPU per request",
                        a.server_cpu_ms / other.server_cpu_ms,
                        f"{a.server_cpu_ms:.2f} / {other.server_cpu_ms:.2f} ms",
                    )
                )
    if "sizes" in groups and len(groups["sizes"].rows) > 1:
        small, large = groups["sizes"].rows[0], groups["sizes"].rows[-1]
        at = f"at {large.name.split()[-1]} / {small.name.split()[-1]}"
        out += [_p50(f"p50 {at}", large, small), _throughput(f"throughput {at}", large, small)]
    if "pages" in groups and len(groups["pages"].rows) > 1:
        one, big = groups["pages"].rows[0], groups["pages"].rows[-1]
        at = f"at {big.name.split()[-1]} / {one.name.split()[-1]}"
        trips = f"{big.round_trips:g} / {one.round_trips:g}"
        out.append(Ratio(f"round trips {at}", _div(big.round_trips or 0, one.round_trips or 0), trips))
        out.append(_p50(f"p50 {at}", big, one))
    if "plain-clients" in groups and len(groups["plain-clients"].rows) == 2:
        lean, redis_py = groups["plain-clients"].rows
        out.append(_throughput("B read channel / B on redis-py throughput", lean, redis_py))
    if "executor" in groups and len(groups["executor"].rows) == 2:
        compiled, general = groups["executor"].rows
        out.append(_throughput("A compiled plans / A general executor throughput", compiled, general))
    if "cluster" in groups:
        out += _cluster(groups["cluster"])

    for on_cluster in (m for m in memory if "cluster" in m.redis):
        version = on_cluster.redis.split()[0]
        on_one = next((m for m in memory if m.redis.split()[0] == version), None)
        if on_one is None or on_one is on_cluster:
            continue
        many, one_ = on_cluster.per_edge(on_cluster.sets), on_one.per_edge(on_one.sets)
        out.append(
            Ratio(
                f"cluster / one Redis memory per edge ({version})",
                _div(many, one_),
                f"{many:.1f} / {one_:.1f} B/edge",
            )
        )
    if "connections" in groups:
        out += _connections(groups["connections"].rows)
    if "workers" in groups:
        out += _workers(groups["workers"].rows)
    if "writes" in groups and len(groups["writes"].rows) == 2:
        a, raw = groups["writes"].rows
        out.append(_throughput("A mutations / FOLLOW script rate", a, raw, unit="per s"))
        if a.server_cpu_ms and raw.server_cpu_ms:
            # What the rate's ratio would be with each side CPU-bound on a core of its own.
            out.append(
                Ratio(
                    "FOLLOW script CPU / A CPU per follow or unfollow",
                    raw.server_cpu_ms / a.server_cpu_ms,
                    f"{raw.server_cpu_ms:.3f} / {a.server_cpu_ms:.3f} ms",
                )
            )
    if "eventlog-script" in groups:
        out += _pooled_ratios(
            groups["eventlog-script"].rows,
            SCRIPT_WITH,
            SCRIPT_WITHOUT,
            "FOLLOW script loop, with the log / without",
        )
    if "eventlog-api" in groups:
        rows = groups["eventlog-api"].rows
        out += _pooled_ratios(rows, API_ON, API_NO_LOG, "A mutations, log + consumer on / no log")
        out += _pooled_ratios(rows, API_ON, API_OFF, "A mutations, consumer on / off (log written in both)")
        out += _pooled_ratios(rows, API_OFF, API_NO_LOG, "A mutations, log without consumer / no log")
    return out


def _cluster(group: Group) -> list[Ratio]:
    """The cluster's rows and one Redis without kept profiles against one Redis (the default), by
    their medians and round by round (each round of a row was taken moments after the same round
    of one Redis)."""

    def row(label: str) -> Row | None:
        return next((r for r in group.rows if r.name.startswith(f"A {label} (")), None)

    single = row("one Redis")
    if single is None:
        return []
    out: list[Ratio] = []
    for label in (
        "cluster",
        "cluster, profiles not kept",
        "cluster, redis-py reads",
        "one Redis, profiles not kept",
    ):
        other = row(label)
        if other is None:
            continue
        out.append(_throughput(f"{label} / one Redis throughput (same page)", other, single))
        each = [
            _div(mine.load.rps, theirs.load.rps)
            for mine, theirs in zip(
                group.rounds.get(other.name, []), group.rounds.get(single.name, []), strict=True
            )
        ]
        if len(each) > 1:
            ordered = sorted(each)
            out.append(
                Ratio(
                    f"{label} / one Redis throughput, round by round (median)",
                    ordered[(len(ordered) - 1) // 2],
                    f"min {ordered[0]:.2f}, max {ordered[-1]:.2f} over {len(each)} rounds: "
                    + " / ".join(f"{ratio:.2f}" for ratio in each),
                )
            )
        if label == "cluster":
            out.append(_p50("cluster / one Redis p50 (same page)", other, single))
            cpu = sorted(
                _div(mine.server_cpu_ms or 0, theirs.server_cpu_ms or 0)
                for mine, theirs in zip(
                    group.rounds.get(other.name, []), group.rounds.get(single.name, []), strict=True
                )
            )
            if cpu:
                out.append(
                    Ratio(
                        "cluster / one Redis server CPU per page, round by round (median)",
                        cpu[(len(cpu) - 1) // 2],
                        f"min {cpu[0]:.2f}, max {cpu[-1]:.2f} over {len(cpu)} rounds",
                    )
                )
            if other.instructions and single.instructions:
                out.append(
                    Ratio(
                        "cluster / one Redis server instructions per page (in process, callgrind)",
                        other.instructions / single.instructions,
                        f"{other.instructions / 1000:,.0f}k / {single.instructions / 1000:,.0f}k",
                    )
                )
    before = row("one Redis, profiles not kept")
    if before is not None:
        for what, mine, theirs in (
            ("Redis µs (commandstats)", single.work.usec_per_request, before.work.usec_per_request),
            ("Redis CPU", single.work.cpu_usec_per_request, before.work.cpu_usec_per_request),
        ):
            out.append(
                Ratio(
                    f"one Redis, profiles kept / not kept: {what} per page",
                    _div(mine, theirs),
                    f"{mine:.1f} / {theirs:.1f} µs",
                )
            )
        if single.server_cpu_ms and before.server_cpu_ms:
            out.append(
                Ratio(
                    "one Redis, profiles kept / not kept: server CPU per page",
                    single.server_cpu_ms / before.server_cpu_ms,
                    f"{single.server_cpu_ms:.3f} / {before.server_cpu_ms:.3f} ms",
                )
            )
    return out


def _at(rows: list[Row], prefix: str, connections: str) -> Row | None:
    return next(
        (r for r in rows if r.name.startswith(prefix) and r.name.endswith(f" at {connections} connections")),
        None,
    )


def _connection_counts(rows: list[Row]) -> list[str]:
    return list(dict.fromkeys(r.name.split(" at ")[-1].split()[0] for r in rows))


def _connections(rows: list[Row]) -> list[Ratio]:
    """At each number of connections: A against B and the Node peer, and each one's p99 / p50."""
    out = []
    for n in _connection_counts(rows):
        a = _at(rows, "A ", n)
        for letter in ("B", "N"):
            other = _at(rows, f"{letter} ", n)
            if a is not None and other is not None:
                out.append(_throughput(f"A / {REFERENCES[letter]} throughput at {n} connections", a, other))
        for row in (r for r in rows if r.name.endswith(f" at {n} connections")):
            who = REFERENCES.get(row.name[0], row.name[0]) if row.name[0] != "A" else "A"
            out.append(
                Ratio(
                    f"{who} p99 / p50 at {n} connections",
                    _div(row.load.p99_ms, row.load.p50_ms),
                    f"{row.load.p99_ms:.2f} / {row.load.p50_ms:.2f} ms",
                )
            )
    return out


def _workers(rows: list[Row]) -> list[Ratio]:
    """Two workers against one: the server's CPU per page (all its processes), which says whether a
    second worker costs each page more (contention: above 1), and the throughput, which on a
    machine whose cores Redis and the load generator share says little about a machine with cores
    to spare."""
    out = []
    for n in _connection_counts(rows):
        one, two = _at(rows, "A 1 worker ", n), _at(rows, "A 2 workers ", n)
        if one is not None and two is not None:
            if one.server_cpu_ms is not None and two.server_cpu_ms is not None:
                out.append(
                    Ratio(
                        f"A 2 workers / 1 worker server CPU per page at {n} connections",
                        _div(two.server_cpu_ms, one.server_cpu_ms),
                        f"{two.server_cpu_ms:.3f} / {one.server_cpu_ms:.3f} ms",
                    )
                )
            out.append(_throughput(f"A 2 workers / 1 worker throughput at {n} connections", two, one))
    return out


def _throughput(name: str, top: Row, bottom: Row, *, unit: str = "req/s") -> Ratio:
    return Ratio(
        name, _div(top.load.rps, bottom.load.rps), f"{top.load.rps:,.0f} / {bottom.load.rps:,.0f} {unit}"
    )


def _p50(name: str, top: Row, bottom: Row) -> Ratio:
    return Ratio(
        name,
        _div(top.load.p50_ms, bottom.load.p50_ms),
        f"{top.load.p50_ms:.2f} / {bottom.load.p50_ms:.2f} ms",
    )


def _div(a: float, b: float) -> float:
    return a / b if b else float("nan")


def _pooled(rows: list[Row], variant: str) -> Row | None:
    """The rounds of `variant` (rows named "<variant>" or "<variant>, round N") as one row: requests
    and seconds summed; Redis work and server CPU per request weighted by each round's requests."""
    mine = [r for r in rows if r.name == variant or r.name.startswith(variant + ", round ")]
    if not mine:
        return None
    requests = sum(r.load.requests for r in mine)
    seconds = sum(r.load.seconds for r in mine)
    total = sum(r.load.total for r in mine)
    usec = sum(r.work.usec for r in mine)
    cpu = [r.server_cpu_ms for r in mine]
    server_ms = (
        None
        if any(c is None for c in cpu)
        else sum((c or 0.0) * r.load.total for c, r in zip(cpu, mine, strict=True)) / total
    )
    load = dataclasses.replace(
        mine[0].load, requests=requests, seconds=seconds, rps=_div(requests, seconds), total=total
    )
    work = dataclasses.replace(mine[0].work, requests=total, usec=usec)
    return dataclasses.replace(mine[0], name=variant, load=load, work=work, server_cpu_ms=server_ms)


def _pooled_ratios(rows: list[Row], top_name: str, bottom_name: str, name: str) -> list[Ratio]:
    """Throughput, server CPU and Redis time per request of two variants measured in rounds."""
    top, bottom = _pooled(rows, top_name), _pooled(rows, bottom_name)
    if top is None or bottom is None:
        return []
    unit = "ops/s" if "script" in name else "req/s"
    out = [_throughput(f"{name}: throughput", top, bottom, unit=unit)]
    if top.server_cpu_ms and bottom.server_cpu_ms:
        who = "harness" if "script" in name else "server"
        out.append(
            Ratio(
                f"{name}: {who} CPU per request",
                top.server_cpu_ms / bottom.server_cpu_ms,
                f"{top.server_cpu_ms:.3f} / {bottom.server_cpu_ms:.3f} ms",
            )
        )
    if top.work.usec_per_request and bottom.work.usec_per_request:
        out.append(
            Ratio(
                f"{name}: Redis time per request",
                top.work.usec_per_request / bottom.work.usec_per_request,
                f"{top.work.usec_per_request:.1f} / {bottom.work.usec_per_request:.1f} µs",
            )
        )
    return out
