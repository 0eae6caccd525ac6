"""The lock of a data directory's embedded Redis (server/owner.py), held by a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from followgraph.server import embedded
from followgraph.server.embedded import OWNER_ENV, DataDirInUseError, SharedRedis, redis_url
from followgraph.server.owner import OwnerLock, owned, owner_pid
from followgraph.server.settings import Settings
from tests.server.processes import redis_pids

# A process that takes the lock of the directory it is given, says so, and holds it until killed.
HOLDER = """
import sys, time
from pathlib import Path
from followgraph.server.owner import OwnerLock
assert OwnerLock(Path(sys.argv[1])).acquire()
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    directory = tmp_path / "data" / "redis"
    directory.mkdir(parents=True)
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)], stdout=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        yield process
        process.kill()


def test_the_lock_names_its_owner_and_dies_with_it(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    directory = tmp_path / "data" / "redis"
    assert owned(directory)
    assert owner_pid(directory) == holder.pid
    lock = OwnerLock(directory)
    assert not lock.acquire(wait=0.2)

    os.kill(holder.pid, signal.SIGKILL)  # a crash: nothing is cleaned up
    holder.wait()

    assert not owned(directory)
    assert lock.acquire()
    assert owner_pid(directory) == os.getpid()
    assert (directory / "owner.lock").stat().st_mode & 0o777 == 0o600
    lock.release()
    assert not owned(directory)


def test_a_command_waits_for_the_owner_s_redis_and_never_starts_a_second_one(
    tmp_path: Path, holder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    monkeypatch.setattr(embedded, "OWNER_WAIT", 0.5)
    with pytest.raises(DataDirInUseError) as raised, redis_url(Settings(data_dir=data_dir)):
        pass
    assert str(raised.value) == (
        f"another followgraph process (pid {holder.pid}) runs the embedded Redis of the data directory "
        f"{data_dir.resolve()}, which did not answer within 0.5s."
    )
    assert redis_pids(data_dir) == []


def test_a_process_on_another_s_embedded_redis_knows_when_it_is_gone_for_good(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    data_dir = tmp_path / "data"
    assert SharedRedis.from_env(Settings(data_dir=data_dir), {}) is None
    shared = SharedRedis.from_env(Settings(data_dir=data_dir), {OWNER_ENV: str(holder.pid)})
    assert shared == SharedRedis(data_dir, holder.pid)
    assert shared.problem() is None  # its owner is there to start it again

    holder.kill()
    holder.wait()

    assert shared.problem() == (
        f"the embedded Redis of the data directory {data_dir.resolve()} is gone, and the process "
        f"that ran it (pid {holder.pid}) has exited: nothing will start it again"
    )
