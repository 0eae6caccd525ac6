"""The data directory is its user's alone (#36): the AOF and the SQL copy hold blocks, mutes,
requests and settings, jwt-secret the signing key. Directories 0700, files 0600, whatever the umask."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import httpx

from followgraph.server.settings import Settings
from followgraph.transport.auth import mint_token
from tests.server.processes import serve


def _loose_umask() -> None:
    # The usual umask, under which files are 0644 and directories 0755 unless made private.
    os.umask(0o022)


def modes(directory: Path) -> dict[str, int]:
    """The permission bits of `directory` and of everything in it but sockets, by relative path."""
    found = {".": stat.S_IMODE(directory.stat().st_mode)}
    for path in directory.rglob("*"):
        st = path.lstat()
        if not stat.S_ISSOCK(st.st_mode):
            found[str(path.relative_to(directory))] = stat.S_IMODE(st.st_mode)
    return found


def graphql(url: str, query: str, token: str) -> object:
    headers = {"authorization": f"Bearer {token}"}
    answer = httpx.post(f"{url}/graphql", json={"query": query}, headers=headers, timeout=10).json()
    assert "errors" not in answer, answer
    return answer["data"]


def test_serve_keeps_the_data_directory_and_its_files_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    with serve(tmp_path, preexec_fn=_loose_umask) as served:
        config = Settings(data_dir=data_dir).auth_config()
        for user_id in ("1", "2"):
            upsert = f'mutation {{ upsertUser(input: {{userId: "{user_id}"}}) {{ errors {{ code }} }} }}'
            graphql(served.url, upsert, mint_token(config, "admin", admin=True))
        follow = 'mutation { follow(input: {userId: "1"}) { changed } }'
        assert graphql(served.url, follow, mint_token(config, "2")) == {"follow": {"changed": True}}
        deadline = time.monotonic() + 20  # the SQL copy applies the follow
        while time.monotonic() < deadline:
            sync = httpx.get(f"{served.url}/readyz").json()["sync"]
            if sync.get("lag_events") == 0:
                break
            time.sleep(0.1)
        assert sync.get("lag_events") == 0, sync
        running = modes(data_dir)
    stopped = modes(data_dir)

    for found in (running, stopped):
        aofs = [name for name in found if name.startswith("redis/appendonly")]
        assert any(name.endswith(".aof") for name in aofs), found
        assert {"jwt-secret", "followgraph.sqlite3", "redis/redis.log"} <= found.keys(), found
        directories = {name for name in found if (data_dir / name).is_dir()}
        assert {".", "redis"} <= directories
        assert {name: found[name] for name in directories} == dict.fromkeys(directories, 0o700)
        files = found.keys() - directories
        assert {name: found[name] for name in files} == dict.fromkeys(files, 0o600)
    # SQLite's write-ahead log and its index, while the copy is open.
    assert {"followgraph.sqlite3-wal", "followgraph.sqlite3-shm"} <= running.keys(), running


def test_an_existing_data_directory_open_to_others_is_made_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    data_dir.chmod(0o755)
    with serve(tmp_path, preexec_fn=_loose_umask) as served:
        assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
        log = served.log()
    assert f"the data directory {data_dir.resolve()} was open to other users (mode 755): made it 700" in log
