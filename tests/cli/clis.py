"""Running the `followgraph` command line in tests: the target Redis (or cluster) of a test, and
CliRunner (the fixtures `target`, `console` and `clean_environment` are in tests/cli/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import redis
from typer.testing import CliRunner, Result

import followgraph.cli.main as cli
from followgraph.store import Keys

KEYS = Keys()


@dataclass
class Target:
    """The session's private Redis or cluster (flushed), a sync client on it, and a data directory."""

    url: str
    db: redis.Redis | redis.RedisCluster
    data_dir: Path

    def options(self) -> list[str]:
        return ["--redis-url", self.url, "--data-dir", str(self.data_dir)]

    def profiles(self) -> int:
        return sum(1 for _ in self.db.scan_iter(match=KEYS.pattern("profile"), count=500))

    def following(self, user_id: str) -> dict[str, int]:
        rows = cast(
            "list[tuple[str, float]]", self.db.zrange(KEYS.following(user_id), 0, -1, withscores=True)
        )
        return {member: int(score) for member, score in rows}


def invoke(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    return CliRunner().invoke(cli.app, list(args), env=env, input=input)
