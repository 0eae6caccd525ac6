"""The capacity model behind `followgraph plan`: from a workload (users, follows, pages and follows a
second, a celebrity) and the costs measured on this project's benchmarks, the Redis memory, the
masters, the API processes and the SQL copy's write rate it needs (docs/scaling-out.md, "Planning
capacity", says where each cost was measured).

Memory is counted the way Redis stores the sets: a sorted set of more than 128 members is a skip
list (some 76 bytes a member on Valkey 9.1, 104 on Redis 7.0), a smaller one a listpack (some 15
bytes a member and 85 to 116 a key), so the model asks what share of the follows sits in big sets,
on each side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from followgraph.store.graph.keys import DEFAULT_LOG_CAP

GB = 1e9


@dataclass(frozen=True, slots=True)
class Costs:
    """What one of each thing costs, as measured here, on Valkey 9.1 (the embedded server) unless
    told otherwise: REDIS_7 has Redis 7.0's memory. Ids of 6 to 7 digits, names of two words."""

    # Redis memory, bytes: a member of a big sorted set (skip list), of a small one (listpack), a
    # small set's key, a user's profile, a user in the search index, an event in the change log.
    big_member: float = 76.0
    small_member: float = 14.8
    small_key: float = 85.0
    profile: float = 185.0
    search_user: float = 688.0
    event: float = 37.0
    # Redis CPU, µs: a fans page of 20 (profiles kept by the servers), a follow.
    redis_page_us: float = 35.0
    redis_follow_us: float = 48.0
    # Server CPU over HTTP, µs: a fans page of 20, a follow.
    api_page_us: float = 210.0
    api_follow_us: float = 190.0
    # Rows the SQL copy writes a follow: the follow, and the mutual pair's when it closes one.
    sql_rows_per_follow: float = 1.3


VALKEY_9 = Costs()
REDIS_7 = replace(
    VALKEY_9,
    big_member=104.0,
    small_member=14.7,
    small_key=116.0,
    profile=204.0,
    search_user=1084.0,
    event=42.0,
)
SERVERS = {"valkey": VALKEY_9, "redis": REDIS_7}


@dataclass(frozen=True, slots=True)
class Workload:
    users: int
    follows: int
    pages_per_second: float = 0.0
    follows_per_second: float = 0.0
    # The share of follows answered by a follow back (each such pair is two entries of mutual sets).
    mutual_share: float = 0.3
    # The shares of following-set and fans-set members in sets of more than 128.
    big_following_share: float = 0.05
    big_fans_share: float = 0.8
    search_index: bool = True
    log_events: int = DEFAULT_LOG_CAP
    # The biggest account: its fans, and the pages of its lists read a second.
    celebrity_fans: int = 0
    celebrity_pages_per_second: float = 0.0


@dataclass(frozen=True, slots=True)
class Machines:
    # Memory of a Redis master, and the share its data may take (the rest: fork copy-on-write while
    # a snapshot or a replica sync runs, replication and client buffers).
    master_gb: float = 32.0
    memory_share: float = 0.5
    # The share of a core a Redis (single-threaded) and an API process are planned to use.
    redis_core_share: float = 0.5
    api_core_share: float = 0.7
    replicas_per_master: int = 1


@dataclass(frozen=True, slots=True)
class Plan:
    graph_gb: float
    users_gb: float
    log_gb: float
    masters_for_memory: int
    masters_for_cpu: int
    masters: int
    replicas: int
    api_cores: float
    api_processes: int
    sql_rows_per_second: float
    celebrity_gb: float
    celebrity_redis_cores: float
    celebrity_readers: int

    @property
    def redis_gb(self) -> float:
        return self.graph_gb + self.users_gb + self.log_gb


def set_members_bytes(members: float, big_share: float, keys: float, costs: Costs) -> float:
    """Memory of `members` spread over `keys` sorted sets, `big_share` of them in big sets."""
    big = members * big_share
    return big * costs.big_member + (members - big) * costs.small_member + keys * costs.small_key


def memory(workload: Workload, costs: Costs = Costs()) -> tuple[float, float, float]:
    """Bytes of the graph (following, fans and mutual sets), of the users (profiles, search index)
    and of the change log."""
    w, u = workload, workload.users
    mutual = w.follows * w.mutual_share
    graph = (
        set_members_bytes(w.follows, w.big_following_share, u, costs)
        + set_members_bytes(w.follows, w.big_fans_share, u, costs)
        + set_members_bytes(mutual, 0.0, u, costs)
    )
    users = u * (costs.profile + (costs.search_user if w.search_index else 0.0))
    return graph, users, w.log_events * costs.event


def plan(workload: Workload, machines: Machines = Machines(), costs: Costs = Costs()) -> Plan:
    """What `workload` needs on `machines`."""
    w, m = workload, machines
    graph, users, log = memory(w, costs)
    # The change log is a stream per master on a cluster, each capped: counted once per master
    # below, once the masters are known.
    budget = m.master_gb * GB * m.memory_share
    by_memory = max(1, math.ceil((graph + users) / max(budget - log, 1.0)))
    redis_cores = (
        w.pages_per_second * costs.redis_page_us + w.follows_per_second * costs.redis_follow_us
    ) / 1e6
    by_cpu = max(1, math.ceil(redis_cores / m.redis_core_share))
    masters = max(by_memory, by_cpu)
    api_cores = (w.pages_per_second * costs.api_page_us + w.follows_per_second * costs.api_follow_us) / 1e6
    celebrity_cores = w.celebrity_pages_per_second * costs.redis_page_us / 1e6
    return Plan(
        graph_gb=graph / GB,
        users_gb=users / GB,
        log_gb=log * masters / GB,
        masters_for_memory=by_memory,
        masters_for_cpu=by_cpu,
        masters=masters,
        replicas=masters * m.replicas_per_master,
        api_cores=api_cores,
        api_processes=max(1, math.ceil(api_cores / m.api_core_share)),
        sql_rows_per_second=w.follows_per_second * costs.sql_rows_per_follow,
        celebrity_gb=w.celebrity_fans * costs.big_member / GB,
        celebrity_redis_cores=celebrity_cores,
        # The master and its replicas each serve a share of the celebrity's pages when they are
        # read from replicas: how many such nodes keep each within its planned share of a core.
        celebrity_readers=max(1, math.ceil(celebrity_cores / m.redis_core_share)),
    )
