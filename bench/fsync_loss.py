"""What a crash of the machine would lose under each appendfsync mode: `python -m bench.fsync_loss`.

Killing a process keeps the kernel's page cache, so a test that kills Redis loses nothing in any
mode. A machine crash keeps only what was fsynced. This measures that directly: redis-server runs
under strace, which logs every write to the AOF and every fsync/fdatasync with its start and end;
a client writes `SET k<i>` one at a time and notes each acknowledgement; then Redis is frozen
(SIGSTOP) at an arbitrary moment, the instant of the "crash". The AOF as the disk would hold it is
the prefix written before the last fsync that had completed; the keys in that prefix survive, and
every acknowledged key after it is lost.

Needs `strace` on PATH. strace slows Redis down, so the write rates are lower than without it; the
number of seconds lost is what matters.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import redis

from followgraph.server.redis_server import RedisServer, current_aof

WRITE = re.compile(r"^(\d+) +\S+ write\(\d+<([^>]*)>, .*\) = (\d+)")
SYNC_START = re.compile(r"^(\d+) +\S+ f(?:data)?sync\(\d+<([^>]*)>")
SYNC_DONE = re.compile(r"^(\d+) +\S+ (?:<\.\.\. f(?:data)?sync resumed>\)|f(?:data)?sync\(.*\)) += 0")


@dataclass
class Crash:
    mode: str
    acknowledged: int
    durable: int
    lost_seconds: float  # from the last durable acknowledgement to the crash

    @property
    def lost(self) -> int:
        # The write in flight at the crash may be durable without having been acknowledged.
        return max(0, self.acknowledged - self.durable)


def durable_bytes(trace: Path, aof: str) -> int:
    """Bytes of `aof` written before the start of the last fsync of it that completed."""
    written = durable = 0
    pending: dict[str, int] = {}
    for line in trace.read_text(errors="replace").splitlines():
        if (m := WRITE.match(line)) and m.group(2) == aof:
            written += int(m.group(3))
        elif (m := SYNC_START.match(line)) and m.group(2) == aof:
            pending[m.group(1)] = written
        if (m := SYNC_DONE.match(line)) and m.group(1) in pending:
            durable = max(durable, pending.pop(m.group(1)))
    return durable


def keys_in(aof: bytes) -> int:
    """How many `SET k<i>` commands a prefix of an AOF holds, whole."""
    count = position = 0
    while True:
        try:
            header_end = aof.index(b"\r\n", position)
            parts = int(aof[position + 1 : header_end])
            cursor = header_end + 2
            words = []
            for _ in range(parts):
                length_end = aof.index(b"\r\n", cursor)
                length = int(aof[cursor + 1 : length_end])
                words.append(aof[length_end + 2 : length_end + 2 + length])
                cursor = length_end + 2 + length + 2
                if cursor > len(aof):
                    return count
        except ValueError:
            return count
        position = cursor
        if words and words[0].upper() == b"SET":
            count += 1


def crash(mode: str, seconds: float, directory: Path) -> Crash:
    server = RedisServer(directory, appendonly=True, appendfsync=mode)
    trace = directory / "strace.log"
    directory.mkdir(parents=True, exist_ok=True)
    command = ["strace", "-f", "-y", "-ttt", "-e", "trace=write,fsync,fdatasync", "-e", "signal=none"]
    tracer = subprocess.Popen([*command, "-o", str(trace), *server.command()], stderr=subprocess.DEVNULL)
    client = redis.Redis(unix_socket_path=str(server.socket_path), socket_timeout=1.0)
    deadline = time.monotonic() + 15
    while True:
        try:
            client.ping()
            break
        except (redis.ConnectionError, redis.TimeoutError, FileNotFoundError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    redis_pid = int(client.info("server")["process_id"])
    acknowledged: list[float] = []
    crashed_at = 0.0

    def freeze() -> None:
        nonlocal crashed_at
        time.sleep(seconds)
        crashed_at = time.monotonic()
        subprocess.run(["kill", "-STOP", str(redis_pid)], check=True)

    freezer = threading.Thread(target=freeze)
    freezer.start()
    try:
        while True:
            client.set(f"k{len(acknowledged)}", "v" * 32)
            acknowledged.append(time.monotonic())
    except (redis.ConnectionError, redis.TimeoutError):
        pass
    freezer.join()
    acknowledged = [at for at in acknowledged if at <= crashed_at]
    subprocess.run(["kill", "-KILL", str(redis_pid)], check=True)
    tracer.wait(30)
    client.close()
    aof = current_aof(directory.resolve())
    assert aof is not None, f"no AOF in {directory}"
    durable = min(keys_in(aof.read_bytes()[: durable_bytes(trace, str(aof))]), len(acknowledged))
    last_durable = acknowledged[durable - 1] if durable else acknowledged[0]
    lost = crashed_at - last_durable if durable < len(acknowledged) else 0.0
    return Crash(mode, len(acknowledged), durable, lost)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", nargs="+", default=["always", "everysec", "no"])
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("strace is not on PATH.")
    print("| appendfsync | crash after | acknowledged writes | lost at the crash | seconds of writes lost |")
    print("| --- | --- | --- | --- | --- |")
    results: dict[str, list[Crash]] = {mode: [] for mode in args.modes}
    with tempfile.TemporaryDirectory() as root:
        for round_ in range(args.rounds):
            for mode in args.modes:
                after = 2.0 + 0.37 * round_  # crash points spread over the fsync second
                result = crash(mode, after, Path(root) / f"{mode}-{round_}")
                results[mode].append(result)
                print(
                    f"| {mode} | {after:.2f} s | {result.acknowledged:,} | {result.lost:,} "
                    f"| {result.lost_seconds:.2f} |"
                )
    print()
    for mode, crashes in results.items():
        worst = max(c.lost_seconds for c in crashes)
        median = statistics.median(c.lost_seconds for c in crashes)
        print(f"{mode}: lost {median:.2f} s of acknowledged writes (median), {worst:.2f} s at worst")
    signal.signal(signal.SIGINT, signal.SIG_DFL)


if __name__ == "__main__":
    main()
