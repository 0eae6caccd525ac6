"""What the `followgraph` commands say when something around them is wrong: a Redis that does not
answer or a malformed Redis URL, files that cannot be read or written, an unusable key, clashing
ports. Each is one sentence and an exit status, never a traceback."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from typer.testing import CliRunner, Result

import followgraph.cli.main as cli
from followgraph.cli import serve
from followgraph.server.redis_server import RedisServer
from followgraph.server.settings import Settings
from followgraph.transport.auth import Principal, authenticate
from tests.cli.clis import KEYS, Target, invoke

pytestmark = pytest.mark.usefixtures("clean_environment")
SECRET = "a-secret-of-the-error-tests-long-enough-for-hs256"


def closed_port() -> int:
    """A local TCP port nothing listens on (it was free a moment ago)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def said(result: Result, console: io.StringIO) -> str:
    """The command's message, having checked that it ended with one rather than an exception."""
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return console.getvalue()


def claims(token: str) -> dict[str, Any]:
    decoded: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    return decoded


# -- a Redis that does not answer, a Redis URL that is not one ----------------------------------

COMMANDS = {
    "verify": ["verify"],
    "repair": ["repair"],
    "demo": ["demo", "--users", "10"],
    "import": ["import", "{edges}"],
    "export": ["export", "{out}"],
    "events tail": ["events", "tail", "--from", "0", "--no-follow"],
    "reconcile": ["reconcile", "--database-url", "sqlite:///{copy}"],
    "rebuild": ["rebuild", "--from-sql", "--database-url", "sqlite:///{copy}"],
}


def unreachable_urls(tmp_path: Path) -> list[str]:
    port = closed_port()
    return [
        f"redis://127.0.0.1:{port}/0",
        f"unix://{tmp_path / 'missing.sock'}",
        f"redis+cluster://127.0.0.1:{port}",
    ]


def command_args(name: str, tmp_path: Path) -> list[str]:
    edges = tmp_path / "edges.csv"
    edges.write_text("follower,followee\nalice,bob\n")
    (tmp_path / "copy.db").touch()
    paths = {"edges": edges, "out": tmp_path / "out.csv", "copy": tmp_path / "copy.db"}
    return [arg.format(**paths) for arg in COMMANDS[name]]


@pytest.mark.parametrize("name", COMMANDS)
def test_an_unreachable_redis_is_one_sentence(name: str, tmp_path: Path, console: io.StringIO) -> None:
    for url in unreachable_urls(tmp_path):
        console.truncate(0)
        console.seek(0)
        args = [*command_args(name, tmp_path), "--redis-url", url, "--data-dir", str(tmp_path / "data")]
        result = invoke(*args)
        assert result.exit_code == 1, (url, console.getvalue())
        text = said(result, console)
        assert text.startswith(f"Cannot reach Redis at {url}: "), text
        assert text.count("\n") == 1, text
        assert "Traceback" not in text


@pytest.mark.parametrize("name", COMMANDS)
def test_a_malformed_redis_url_is_one_sentence(name: str, tmp_path: Path, console: io.StringIO) -> None:
    url = "redis://127.0.0.1:notaport/0"
    result = invoke(*command_args(name, tmp_path), "--redis-url", url, "--data-dir", str(tmp_path / "data"))
    assert result.exit_code == 1, console.getvalue()
    assert said(result, console).startswith(
        f"{url} is not a usable Redis URL: Port could not be cast to integer value as 'notaport'. "
        "Check --redis-url or FOLLOWGRAPH_REDIS_URL."
    )


def test_a_redis_password_is_not_shown(tmp_path: Path, console: io.StringIO) -> None:
    port = closed_port()
    result = invoke("verify", "--redis-url", f"redis://me:s3cret@127.0.0.1:{port}/0")
    assert result.exit_code == 1
    text = said(result, console)
    assert f"Cannot reach Redis at redis://me:***@127.0.0.1:{port}/0: " in text
    assert "s3cret" not in text


def test_an_unreachable_redis_as_a_subprocess_prints_no_traceback(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLLOWGRAPH_")}
    result = subprocess.run(
        [sys.executable, "-m", "followgraph.cli", "verify", "--redis-url", url],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "COLUMNS": "80"},
    )
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Cannot reach Redis at {url}: Error 111 connecting to 127.0.0.1:")


def test_token_is_printed_when_redis_cannot_say_whether_its_user_exists(
    tmp_path: Path, console: io.StringIO
) -> None:
    malformed = "redis://127.0.0.1:x/0"
    for url in [*unreachable_urls(tmp_path), malformed]:
        console.truncate(0)
        console.seek(0)
        result = invoke("token", "alice", "--redis-url", url, "--data-dir", str(tmp_path))
        assert result.exit_code == 0, repr(result.exception)
        who = authenticate("Bearer " + result.stdout.strip(), Settings(data_dir=tmp_path).auth_config())
        assert who == Principal("alice", frozenset())
        text = console.getvalue()
        assert text.startswith("Could not check that user alice is registered: "), text
        why = "is not a usable Redis URL" if url == malformed else f"Cannot reach Redis at {url}: "
        assert why in text


# -- export keeps what it would overwrite until it is done ----------------------------------------


def test_a_failed_export_leaves_the_file_as_it_was(tmp_path: Path, console: io.StringIO) -> None:
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    result = invoke("export", str(keep), "--redis-url", f"redis://127.0.0.1:{closed_port()}/0")
    assert result.exit_code == 1
    assert "Cannot reach Redis" in said(result, console)
    assert keep.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.csv"]


def test_an_export_replaces_the_file_keeping_its_mode(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    target.db.hset(KEYS.profile("alice"), "createdAt", "1")
    keep = tmp_path / "users.csv"
    keep.write_text("old\n")
    keep.chmod(0o640)
    link = tmp_path / "link.csv"
    link.symlink_to(keep)
    result = invoke("export", str(link), "--kind", "users", *target.options())
    assert result.exit_code == 0, console.getvalue()
    assert link.is_symlink()
    assert keep.read_text().startswith("userId,name,avatarUrl")
    assert keep.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


@pytest.mark.parametrize("where", ["missing directory", "directory"])
def test_export_to_a_path_that_cannot_be_written(
    where: str, target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    path = tmp_path / "missing" / "x.csv" if where == "missing directory" else tmp_path
    result = invoke("export", str(path), "--format", "csv", *target.options())
    assert result.exit_code == 1
    reason = "No such file or directory" if where == "missing directory" else "Is a directory"
    assert said(result, console).strip() == f"Cannot write {path}: {reason}."


# -- token: RS256 keys and lifetimes --------------------------------------------------------------


def rsa_public_key_file(tmp_path: Path) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path / "public.pem"
    path.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return path


def test_token_with_a_public_key_only(tmp_path: Path, console: io.StringIO) -> None:
    env = {"FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE": str(rsa_public_key_file(tmp_path))}
    result = invoke("token", "42", "--data-dir", str(tmp_path), env=env)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert said(result, console).strip() == (
        "Cannot mint a token: FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE is missing: "
        "minting RS256 tokens needs the private key."
    )


def test_token_with_an_unreadable_key_does_not_blame_the_lifetime(
    tmp_path: Path, console: io.StringIO
) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a key\n")
    result = invoke(
        "token", "42", "--data-dir", str(tmp_path), env={"FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE": str(junk)}
    )
    assert result.exit_code == 2
    text = said(result, console)
    assert "--ttl" not in text
    assert text.strip() == (
        "Configuration error: FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE does not hold a readable PEM public key."
    )


def test_token_longer_than_the_maximum_lifetime_names_the_setting(
    tmp_path: Path, console: io.StringIO
) -> None:
    env = {"FOLLOWGRAPH_JWT_MAX_LIFETIME": "3600", "FOLLOWGRAPH_JWT_SECRET": SECRET}
    result = invoke("token", "42", "--ttl", "7200", "--admin", env=env)
    assert result.exit_code == 2
    assert said(result, console).strip() == (
        "Cannot mint a token: --ttl 7200 is longer than FOLLOWGRAPH_JWT_MAX_LIFETIME allows "
        "(3600 seconds): pass a shorter --ttl."
    )


def test_token_without_ttl_fits_the_maximum_lifetime(console: io.StringIO) -> None:
    env = {"FOLLOWGRAPH_JWT_MAX_LIFETIME": "3600", "FOLLOWGRAPH_JWT_SECRET": SECRET}
    result = invoke("token", "42", "--admin", env=env)
    assert result.exit_code == 0, console.getvalue()
    token = claims(result.stdout.strip())
    assert token["exp"] - token["iat"] == 3600


def test_token_help_names_the_real_bound() -> None:
    result = CliRunner().invoke(cli.app, ["token", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "at most 30 days" not in text
    assert "at most FOLLOWGRAPH_JWT_MAX_LIFETIME (2592000 seconds, 30 days, unless set)" in text


# -- the demo's token and address -----------------------------------------------------------------


def test_demo_token_fits_a_short_maximum_lifetime(target: Target, console: io.StringIO) -> None:
    env = {"FOLLOWGRAPH_JWT_MAX_LIFETIME": "86400"}
    result = invoke("demo", "--users", "20", *target.options(), env=env)
    assert result.exit_code == 0, console.getvalue()
    token = claims(result.stdout.strip().splitlines()[-1])
    assert token["exp"] - token["iat"] == 86400
    assert token["sub"] == "20"


def test_demo_token_lasts_a_week_by_default(target: Target, console: io.StringIO) -> None:
    result = invoke("demo", "--users", "50", *target.options())
    assert result.exit_code == 0, console.getvalue()
    token = claims(result.stdout.strip().splitlines()[-1])
    assert token["exp"] - token["iat"] == 7 * 86400


def test_demo_without_a_private_key_says_there_is_no_token(
    target: Target, tmp_path: Path, console: io.StringIO
) -> None:
    env = {"FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE": str(rsa_public_key_file(tmp_path))}
    result = invoke("demo", "--users", "20", *target.options(), env=env)
    assert result.exit_code == 0, repr(result.exception)
    assert target.profiles() == 20
    assert result.stdout.strip() == ""
    assert (
        "No token of demo user 20: FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE is missing: "
        "minting RS256 tokens needs the private key." in console.getvalue()
    )


def test_serve_welcome_gives_the_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(data_dir=tmp_path, jwt_secret=SECRET, host="0.0.0.0", port=8123)
    serve._print_welcome(settings, serving=True)
    out = capsys.readouterr().out
    assert "FollowGraph on http://127.0.0.1:8123/ (the web app; GraphiQL at /graphql)" in out
    assert out.strip().splitlines()[-1].count(".") == 2


def test_serve_welcome_on_port_zero_prints_no_wrong_address(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(data_dir=tmp_path, jwt_secret=SECRET, port=0)
    serve._print_welcome(settings, serving=True)
    out = capsys.readouterr().out
    assert ":0/" not in out
    assert "FollowGraph on 127.0.0.1, on a port the system chooses" in out


def test_serve_refuses_the_api_port_for_metrics(redis_server: RedisServer, tmp_path: Path) -> None:
    port = closed_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOLLOWGRAPH_")}
    args = ["serve", "--port", str(port), "--metrics-port", str(port), "--redis-url", redis_server.url]
    result = subprocess.run(
        [sys.executable, "-m", "followgraph.cli", *args, "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "FOLLOWGRAPH_JWT_SECRET": SECRET},
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"--metrics-port or FOLLOWGRAPH_METRICS_PORT is {port}, the API's port (--port or "
        "FOLLOWGRAPH_PORT): choose another port, or leave it unset to serve /metrics on the API's port."
    )


# -- import: text that is not UTF-8, formats, short rows, counts ----------------------------------


def test_import_of_a_file_that_is_not_utf8(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = tmp_path / "bin.csv"
    source.write_bytes(b"a,b,1\nc,d\xe9,2\n")
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 1
    assert said(result, console).strip() == (
        f"{source} is not UTF-8 text (byte 0xe9 at offset 9, line 2): save it as UTF-8 and import it again."
    )
    assert target.profiles() == 0

    console.truncate(0)
    console.seek(0)
    (tmp_path / "bom.csv").write_bytes(b"\xff\xfe1,2\n")
    first = invoke("import", str(tmp_path / "bom.csv"), *target.options())
    assert first.exit_code == 1
    assert "bom.csv is not UTF-8 text (byte 0xff at offset 0, line 1)" in said(first, console)


def test_import_of_standard_input_that_is_not_utf8(target: Target, console: io.StringIO) -> None:
    result = CliRunner().invoke(cli.app, ["import", "-", *target.options()], input=b"a,b,1\nc,d\xe9,2\n")
    assert result.exit_code == 1
    assert said(result, console).strip() == (
        "Standard input is not UTF-8 text (byte 0xe9): send UTF-8 text; "
        "the rows read before that byte may have been imported."
    )


def test_import_of_standard_input_with_a_byte_order_mark(target: Target, console: io.StringIO) -> None:
    data = "\ufefffollower,followee\nalice,bob\n".encode()
    result = CliRunner().invoke(cli.app, ["import", "-", *target.options()], input=data)
    assert result.exit_code == 0, console.getvalue()
    assert set(target.following("alice")) == {"bob"}


def test_import_format_is_a_choice(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = tmp_path / "edges.txt"
    source.write_text('{"follower": "alice", "followee": "bob"}\n')
    bad = invoke("import", str(source), "--format", "xml", *target.options())
    assert bad.exit_code == 2
    assert "'xml' is not one of 'csv', 'jsonl'" in bad.output
    upper = invoke("import", str(source), "--format", "JSONL", *target.options())
    assert upper.exit_code == 0, console.getvalue()
    assert set(target.following("alice")) == {"bob"}
    helped = CliRunner().invoke(cli.app, ["import", "--help"], env={"COLUMNS": "80"})
    assert "--format <csv|jsonl>" in " ".join(helped.stdout.split())


def test_short_rows_name_what_they_lack(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = tmp_path / "edges.csv"
    source.write_text("follower,followee\nalice,bob\n7\n")
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 1
    assert "  line 3: no followee: the row ends before its followee column" in console.getvalue()

    console.truncate(0)
    console.seek(0)
    jsonl = tmp_path / "controls.jsonl"
    jsonl.write_text(json.dumps({"kind": "MUTE", "actor": "alice"}) + "\n")
    controls = invoke("import", str(jsonl), "--kind", "controls", *target.options())
    assert controls.exit_code == 1
    assert "  line 1: no target (an object needs kind, actor and target)" in console.getvalue()


def test_counts_agree_with_their_nouns(target: Target, tmp_path: Path, console: io.StringIO) -> None:
    source = tmp_path / "edges.csv"
    source.write_text("follower,followee,followed_at\nalice,bob,1\nbob,bob,2\n")
    result = invoke("import", str(source), *target.options())
    assert result.exit_code == 1
    text = console.getvalue()
    assert "2 rows in " in text
    assert "1 follow written, 0 already there, 1 rejected." in text
    assert "1 row was rejected: fix it and run the import again." in text

    console.truncate(0)
    console.seek(0)
    one = tmp_path / "one.csv"
    one.write_text("follower,followee,followed_at\ncarol,dave,3\n")
    assert invoke("import", str(one), *target.options()).exit_code == 0
    assert "1 row in " in console.getvalue()

    out = tmp_path / "out.csv"
    target.db.flushall()
    assert invoke("import", str(one), *target.options()).exit_code == 0
    console.truncate(0)
    console.seek(0)
    assert invoke("export", str(out), *target.options()).exit_code == 0
    assert "Exported 1 edge in " in console.getvalue()
    assert invoke("verify", *target.options()).exit_code == 0
    assert "Checked 1 follow of 1 user." in console.getvalue()


# -- export-schema --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["missing directory", "directory"])
def test_export_schema_to_a_path_that_cannot_be_written(
    where: str, tmp_path: Path, console: io.StringIO
) -> None:
    path = tmp_path / "missing" / "x.graphql" if where == "missing directory" else tmp_path
    result = invoke("export-schema", "-o", str(path))
    assert result.exit_code == 1
    reason = "No such file or directory" if where == "missing directory" else "Is a directory"
    assert said(result, console).strip() == f"Cannot write {path}: {reason}."
