"""`followgraph plan`: what a workload needs (cli/capacity.py), printed for a person or as JSON."""

from __future__ import annotations

import enum
import json
import re
from dataclasses import asdict
from typing import Annotated

import typer

from followgraph.cli.capacity import SERVERS, Machines, Plan, Workload, plan


class Server(enum.Enum):
    VALKEY = "valkey"
    REDIS = "redis"


_SUFFIXES = {"": 1, "k": 1e3, "m": 1e6, "b": 1e9}
_COUNT = re.compile(r"(\d+(?:\.\d+)?)\s*([kmb]?)", re.IGNORECASE)


def count(text: str | float) -> float:
    """A count as people write it: 100M, 10B, 2.5k, 50000 (a default comes as a number)."""
    if isinstance(text, int | float):
        return float(text)
    found = _COUNT.fullmatch(text.strip().replace(",", "").replace("_", ""))
    if found is None:
        raise typer.BadParameter(f"{text!r} is not a count such as 5000, 2.5k, 100M or 10B.")
    return float(found[1]) * _SUFFIXES[found[2].lower()]


def plan_command(
    users: Annotated[float, typer.Option(parser=count, metavar="COUNT", help="Registered users.")],
    follows: Annotated[float, typer.Option(parser=count, metavar="COUNT", help="Follows (edges).")],
    pages: Annotated[
        float, typer.Option(parser=count, metavar="COUNT", help="Pages of lists read a second (peak).")
    ] = 0.0,
    follows_per_second: Annotated[
        float, typer.Option(parser=count, metavar="COUNT", help="Follows and unfollows a second (peak).")
    ] = 0.0,
    celebrity: Annotated[
        float, typer.Option(parser=count, metavar="COUNT", help="Fans of the biggest account.")
    ] = 0.0,
    celebrity_pages: Annotated[
        float,
        typer.Option(
            parser=count, metavar="COUNT", help="Pages of the biggest account's lists read a second."
        ),
    ] = 0.0,
    mutual_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of follows answered by a follow back.")
    ] = 0.3,
    big_fans_share: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Share of follows to accounts with more than 128 fans."),
    ] = 0.8,
    big_following_share: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Share of follows by users who follow more than 128."),
    ] = 0.05,
    no_search: Annotated[bool, typer.Option("--no-search", help="Without the search index.")] = False,
    server: Annotated[
        Server, typer.Option(help="The server's memory costs: Valkey 9.1 (the embedded one) or Redis 7.0.")
    ] = Server.VALKEY,
    master_gb: Annotated[float, typer.Option(min=0.5, help="Memory of a Redis master, GB.")] = 32.0,
    replicas: Annotated[int, typer.Option(min=0, help="Replicas per master.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
) -> None:
    """Plan capacity: the Redis memory, masters, API processes and SQL write rate a workload needs,
    from the costs measured on this project's benchmarks (docs: Scaling out, Planning capacity).

    \b
    For example, 100M users and 10B follows at 100k pages and 10k follows a second:
      followgraph plan --users 100M --follows 10B --pages 100k --follows-per-second 10k
    """
    workload = Workload(
        users=int(users),
        follows=int(follows),
        pages_per_second=pages,
        follows_per_second=follows_per_second,
        mutual_share=mutual_share,
        big_following_share=big_following_share,
        big_fans_share=big_fans_share,
        search_index=not no_search,
        celebrity_fans=int(celebrity),
        celebrity_pages_per_second=celebrity_pages,
    )
    machines = Machines(master_gb=master_gb, replicas_per_master=replicas)
    result = plan(workload, machines, SERVERS[server.value])
    if as_json:
        typer.echo(
            json.dumps({"workload": asdict(workload), "machines": asdict(machines), "plan": _json(result)})
        )
        return
    for line in describe(workload, machines, result):
        typer.echo(line)


def _json(result: Plan) -> dict[str, float | int]:
    return {**asdict(result), "redis_gb": result.redis_gb}


def describe(workload: Workload, machines: Machines, result: Plan) -> list[str]:
    """The plan in lines a person reads."""
    w, m, p = workload, machines, result
    lines = [
        f"Workload: {w.users:,} users, {w.follows:,} follows, {w.pages_per_second:,.0f} pages/s, "
        f"{w.follows_per_second:,.0f} follows/s",
        "",
        f"Redis memory        {_size(p.redis_gb)}: the graph {_size(p.graph_gb)}, users {_size(p.users_gb)}"
        f"{' (search index included)' if w.search_index else ''}, change log {_size(p.log_gb)}",
        f"Redis masters       {p.masters} ({p.masters_for_memory} for memory at {m.memory_share:.0%} of "
        f"{m.master_gb:g} GB each, {p.masters_for_cpu} for CPU at {m.redis_core_share:.0%} of a core)",
        f"Replicas            {p.replicas} ({m.replicas_per_master} per master)",
        f"API processes       {p.api_processes} ({p.api_cores:,.1f} cores at {m.api_core_share:.0%} each)",
        f"SQL copy            {p.sql_rows_per_second:,.0f} rows written a second",
    ]
    if w.celebrity_fans:
        lines += [
            f"Biggest account     {w.celebrity_fans:,} fans: {_size(p.celebrity_gb)} in one slot, "
            f"on one master",
            f"  its pages         {p.celebrity_redis_cores:,.2f} Redis cores: "
            + (
                "its master serves them"
                if p.celebrity_readers <= 1
                else f"more than its master serves; {p.celebrity_readers} nodes would (its master and "
                f"{p.celebrity_readers - 1} replica(s)) with reads from replicas "
                "(FOLLOWGRAPH_READ_FROM_REPLICAS=1)"
            ),
        ]
    return lines


def _size(gb: float) -> str:
    return f"{gb:,.1f} GB" if gb >= 1 else f"{gb * 1000:,.0f} MB"
