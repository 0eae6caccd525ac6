"""The ratios the report leads with, computed from the groups of rows and the memory figures of a run."""

from __future__ import annotations

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
        out.append(_throughput("B lean client / B on redis-py throughput", lean, redis_py))
    if "executor" in groups and len(groups["executor"].rows) == 2:
        compiled, general = groups["executor"].rows
        out.append(_throughput("A compiled plans / A general executor throughput", compiled, general))
    if "cluster" in groups and len(groups["cluster"].rows) > 1:
        single, cluster = groups["cluster"].rows[0], groups["cluster"].rows[1]
        out.append(_throughput("cluster / one Redis throughput (same page)", cluster, single))
        out.append(_p50("cluster / one Redis p50 (same page)", cluster, single))

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
    if "writes" in groups and len(groups["writes"].rows) == 2:
        a, raw = groups["writes"].rows
        out.append(_throughput("A mutations / FOLLOW script rate", a, raw, unit="per s"))
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
