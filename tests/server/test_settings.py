from __future__ import annotations

from pathlib import Path

import pytest

from followgraph.server.settings import ConfigError, Settings
from followgraph.store.redis.replicas import ReplicaWait


def test_defaults_are_development_friendly() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port, settings.workers) == ("127.0.0.1", 8000, 1)
    assert settings.graphiql and settings.introspection and settings.suggestions
    assert settings.follow_rate_limit == "400/day"
    assert settings.max_batch == 0


def test_production_turns_the_explorer_introspection_and_suggestions_off() -> None:
    settings = Settings.from_env({"FOLLOWGRAPH_PRODUCTION": "1"})
    assert not (settings.graphiql or settings.introspection or settings.suggestions)
    explicit = Settings.from_env({"FOLLOWGRAPH_PRODUCTION": "yes", "FOLLOWGRAPH_INTROSPECTION": "on"})
    assert explicit.introspection and not explicit.graphiql


def test_every_field_is_read_from_its_variable() -> None:
    settings = Settings.from_env(
        {
            "FOLLOWGRAPH_PORT": "9000",
            "FOLLOWGRAPH_DATA_DIR": "/tmp/x",
            "FOLLOWGRAPH_CORS_ORIGINS": "https://a.example, https://b.example",
            "FOLLOWGRAPH_REQUEST_TIMEOUT": "2.5",
            "FOLLOWGRAPH_MAX_COST": "500",
            "FOLLOWGRAPH_FOLLOW_RATE_LIMIT": "10 per hour",
        }
    )
    assert settings.port == 9000
    assert settings.data_dir == Path("/tmp/x")
    assert settings.cors_origins == ("https://a.example", "https://b.example")
    assert settings.request_timeout == 2.5
    assert settings.query_limits.max_cost == 500
    assert settings.follow_rate_limit == "10 per hour"


def test_connection_and_token_limits_are_read_from_their_variables(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "FOLLOWGRAPH_HEADER_TIMEOUT": "2",
            "FOLLOWGRAPH_MAX_HEADER_BYTES": "8192",
            "FOLLOWGRAPH_MAX_CONNECTIONS": "500",
            "FOLLOWGRAPH_METRICS_PORT": "9100",
            "FOLLOWGRAPH_JWT_MAX_LIFETIME": "3600",
            "FOLLOWGRAPH_REQUEST_TIMEOUT": "4",
            "FOLLOWGRAPH_DATA_DIR": str(tmp_path),
        }
    )
    limits = settings.read_limits
    assert (limits.header_timeout, limits.max_header_bytes, limits.max_connections) == (2.0, 8192, 500)
    assert limits.body_timeout == 5.0  # the request timeout, and a second for the app to answer 408
    assert settings.metrics_port == 9100
    assert settings.auth_config().max_lifetime_seconds == 3600


def test_anonymous_socket_limits_are_read_from_their_variables() -> None:
    defaults = Settings.from_env({}).socket_limits
    assert (defaults.anonymous_seconds, defaults.max_anonymous) == (10.0, 1000)
    settings = Settings.from_env(
        {"FOLLOWGRAPH_WS_ANONYMOUS_SECONDS": "2.5", "FOLLOWGRAPH_WS_MAX_ANONYMOUS_CONNECTIONS": "30"}
    )
    assert (settings.socket_limits.anonymous_seconds, settings.socket_limits.max_anonymous) == (2.5, 30)
    refused = Settings.from_env({"FOLLOWGRAPH_WS_ANONYMOUS_SECONDS": "0"})
    assert refused.socket_limits.anonymous_seconds == 0.0


def test_overrides_win_over_the_environment() -> None:
    settings = Settings.from_env({"FOLLOWGRAPH_PORT": "9000"}, port=9100, host=None)
    assert (settings.port, settings.host) == (9100, "127.0.0.1")


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("FOLLOWGRAPH_PORT", "abc", "FOLLOWGRAPH_PORT='abc' is not a whole number"),
        ("FOLLOWGRAPH_PORT", "70000", "FOLLOWGRAPH_PORT=70000 is out of range"),
        ("FOLLOWGRAPH_PRODUCTION", "maybe", "FOLLOWGRAPH_PRODUCTION='maybe' is not a boolean"),
        ("FOLLOWGRAPH_LOG_LEVEL", "loud", "FOLLOWGRAPH_LOG_LEVEL='loud' is not one of"),
        ("FOLLOWGRAPH_APPENDFSYNC", "sometimes", "FOLLOWGRAPH_APPENDFSYNC='sometimes' is not one of"),
        ("FOLLOWGRAPH_KEY_PREFIX", "a{b", "FOLLOWGRAPH_KEY_PREFIX='a{b' must be non-empty"),
        ("FOLLOWGRAPH_REQUEST_TIMEOUT", "0", "FOLLOWGRAPH_REQUEST_TIMEOUT=0.0 is out of range"),
        ("FOLLOWGRAPH_FOLLOW_RATE_LIMIT", "lots", "FOLLOWGRAPH_FOLLOW_RATE_LIMIT='lots' is not one rate"),
        ("FOLLOWGRAPH_MAX_DEPTH", "1", "FOLLOWGRAPH_MAX_DEPTH=1 is out of range"),
        ("FOLLOWGRAPH_HEADER_TIMEOUT", "0", "FOLLOWGRAPH_HEADER_TIMEOUT=0.0 is out of range"),
        ("FOLLOWGRAPH_MAX_HEADER_BYTES", "100", "FOLLOWGRAPH_MAX_HEADER_BYTES=100 is out of range"),
        ("FOLLOWGRAPH_MAX_CONNECTIONS", "0", "FOLLOWGRAPH_MAX_CONNECTIONS=0 is out of range"),
        ("FOLLOWGRAPH_METRICS_PORT", "0", "FOLLOWGRAPH_METRICS_PORT=0 is out of range"),
        ("FOLLOWGRAPH_JWT_MAX_LIFETIME", "10", "FOLLOWGRAPH_JWT_MAX_LIFETIME=10 is out of range"),
        (
            "FOLLOWGRAPH_WS_ANONYMOUS_SECONDS",
            "-1",
            "FOLLOWGRAPH_WS_ANONYMOUS_SECONDS=-1.0 is out of range: use 0 to 3600",
        ),
        (
            "FOLLOWGRAPH_WS_ANONYMOUS_SECONDS",
            "soon",
            "FOLLOWGRAPH_WS_ANONYMOUS_SECONDS='soon' is not a number",
        ),
        (
            "FOLLOWGRAPH_WS_MAX_ANONYMOUS_CONNECTIONS",
            "0",
            "FOLLOWGRAPH_WS_MAX_ANONYMOUS_CONNECTIONS=0 is out of range: use 1 to 1000000",
        ),
        ("FOLLOWGRAPH_REDIS_URL", "http://nope", "FOLLOWGRAPH_REDIS_URL='http://nope' is not a Redis URL"),
        (
            "FOLLOWGRAPH_REDIS_URL",
            "127.0.0.1:6379",
            "FOLLOWGRAPH_REDIS_URL='127.0.0.1:6379' is not a Redis URL",
        ),
        (
            "FOLLOWGRAPH_REDIS_URL",
            "http://u:pw@h:1",
            r"FOLLOWGRAPH_REDIS_URL='http://u:\*\*\*@h:1' is not a Redis URL",
        ),
        ("FOLLOWGRAPH_JWT_PRIVATE_KEY_FILE", "/k.pem", "is set without FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE"),
        ("FOLLOWGRAPH_WRITE_REPLICAS", "-1", "FOLLOWGRAPH_WRITE_REPLICAS=-1 is out of range: use 0 to 100"),
        (
            "FOLLOWGRAPH_DATABASE_URL",
            "nonsense",
            "FOLLOWGRAPH_DATABASE_URL: Unsupported database URL 'nonsense'",
        ),
        ("FOLLOWGRAPH_DATABASE_URL", "oracle://u:pw@h/db", "the scheme 'oracle' is not a database"),
        (
            "FOLLOWGRAPH_DATABASE_URL",
            "postgresql://u:pw@h:x/db",
            "='postgresql://u:\\*\\*\\*@h:x/db' is not a database URL",
        ),
    ],
)
def test_a_bad_value_names_its_variable(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("{", r"\{")):
        Settings.from_env({variable: value})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"port": 70000}, "--port or FOLLOWGRAPH_PORT=70000 is out of range"),
        ({"workers": 0}, "--workers or FOLLOWGRAPH_WORKERS=0 is out of range"),
        (
            {"redis_url": "http://nope"},
            "--redis-url or FOLLOWGRAPH_REDIS_URL='http://nope' is not a Redis URL",
        ),
        ({"demo": True, "production": True}, r"--demo \(FOLLOWGRAPH_DEMO=1\) hands out tokens"),
    ],
)
def test_a_bad_value_of_an_option_names_the_option_too(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Settings.from_env({}, **overrides)


@pytest.mark.parametrize(
    "url", ["redis://127.0.0.1:6379/0", "rediss://h:1", "unix:///run/r.sock", "redis+cluster://h:1,h:2"]
)
def test_every_redis_url_scheme_is_accepted(url: str) -> None:
    assert Settings.from_env({"FOLLOWGRAPH_REDIS_URL": url}).redis_url == url


def test_secret_and_public_key_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not both"):
        Settings.from_env(
            {"FOLLOWGRAPH_JWT_SECRET": "x" * 40, "FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE": str(tmp_path)}
        )


def test_an_unreadable_key_file_names_its_variable(tmp_path: Path) -> None:
    settings = Settings.from_env({"FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE": str(tmp_path / "missing.pem")})
    with pytest.raises(ConfigError, match=r"FOLLOWGRAPH_JWT_PUBLIC_KEY_FILE=.*cannot be read"):
        settings.auth_config()


def test_writes_wait_for_the_replicas_asked_for_within_the_redis_timeout() -> None:
    assert Settings().replica_wait is None
    wait = Settings.from_env(
        {"FOLLOWGRAPH_WRITE_REPLICAS": "2", "FOLLOWGRAPH_WRITE_REPLICAS_TIMEOUT": "0.25"}
    )
    assert wait.replica_wait == ReplicaWait(2, 0.25)
    assert wait.replica_wait.command == ("WAIT", 2, 250)
    with pytest.raises(ConfigError, match="FOLLOWGRAPH_WRITE_REPLICAS_TIMEOUT=1 must be shorter than"):
        Settings.from_env({"FOLLOWGRAPH_WRITE_REPLICAS": "1", "FOLLOWGRAPH_WRITE_REPLICAS_TIMEOUT": "1"})
    # Without replicas to wait for, the timeout is not used.
    assert Settings.from_env({"FOLLOWGRAPH_WRITE_REPLICAS_TIMEOUT": "5"}).replica_wait is None


def test_to_env_round_trips() -> None:
    settings = Settings(port=9001, cors_origins=("https://a.example",), production=True, graphiql=False)
    assert Settings.from_env(settings.to_env()) == settings
