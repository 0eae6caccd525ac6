"""Configuration: one frozen dataclass, built from the environment in one place.

Every field `name` is read from FOLLOWGRAPH_NAME (upper case); a bad value fails at start with a
sentence naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from limits import parse_many

from followgraph.server.redis_client import REDIS_SCHEMES, ClusterUrl, SentinelUrl
from followgraph.server.settings_help import HELP as HELP
from followgraph.server.settings_help import OTHER_VARIABLES as OTHER_VARIABLES
from followgraph.server.settings_help import SHOWN_DEFAULTS
from followgraph.server.settings_values import ENV_PREFIX as ENV_PREFIX
from followgraph.server.settings_values import ConfigError as ConfigError
from followgraph.server.settings_values import env_name, named, parser, read_file
from followgraph.store.graph.keys import DEFAULT_LOG_CAP, Keys
from followgraph.store.graph.paging import MAX_LIMIT
from followgraph.store.graph.ratelimit import FollowLimit
from followgraph.store.redis.replicas import ReplicaWait
from followgraph.store.redis.tracking import DEFAULT_CAPACITY as DEFAULT_PROFILE_CACHE
from followgraph.store.sql.urls import UnsupportedDatabaseError, database_url, hidden_url
from followgraph.transport.persisted import ManifestError, PersistedQueries, TrustedMode, load_manifest

if TYPE_CHECKING:
    from followgraph.schema import QueryLimits
    from followgraph.transport.auth import AuthConfig
    from followgraph.transport.http_protocol import ReadLimits
    from followgraph.transport.subscriptions import SocketLimits

# What the command line needs of the settings is their names, defaults and checks: the modules that
# turn settings into the server's parts (the schema, the SQL copy, tokens, the protocols) are
# imported by the methods that build those parts, so that `followgraph --help` and an import or an
# export do not start by loading the whole server (tests/cli/test_startup.py checks it, and that
# the defaults written out below are those of the parts).

LOG_LEVELS = ("debug", "info", "warning", "error")
APPENDFSYNC = ("everysec", "always", "no")
# Settings that take one of a few words.
TRUSTED_MODES = tuple(mode.value for mode in TrustedMode)
CHOICES: dict[str, tuple[str, ...]] = {
    "log_level": LOG_LEVELS,
    "appendfsync": APPENDFSYNC,
    "trusted_documents": TRUSTED_MODES,
}
# Numeric settings and their ranges (a setting left unset, such as metrics_port, is not checked).
RANGES: dict[str, tuple[float, float]] = {
    "port": (0, 65535),
    "workers": (1, 64),
    "metrics_port": (1, 65535),
    "max_body_bytes": (1024, 100_000_000),
    "max_batch": (0, 100),
    "max_depth": (2, 100),
    "max_aliases": (0, 1000),
    "max_directives": (0, 100),
    "max_cost": (1, 10_000_000),
    "max_tokens": (100, 1_000_000),
    # No more than the store pages per call.
    "max_page_size": (1, MAX_LIMIT),
    "max_errors": (1, 100),
    "max_header_bytes": (1024, 1_048_576),
    "max_connections": (1, 1_000_000),
    "jwt_max_lifetime": (60, 366 * 86400),
    "event_log_max": (1000, 1_000_000_000),
    "sync_batch": (1, 10_000),
    "event_log_keep": (0, 366 * 86400),
    "ws_max_subscriptions": (1, 1000),
    "ws_max_connections_per_user": (1, 10_000),
    "ws_max_anonymous_connections": (1, 1_000_000),
    "subscription_buffer": (1, 1_000_000),
    "profile_cache": (0, 10_000_000),
    "redis_timeout": (0.05, 60),
    "write_replicas": (0, 100),
    "write_replicas_timeout": (0.01, 60),
    "header_timeout": (0.1, 300),
    "request_timeout": (0.1, 600),
    "ws_ping_seconds": (0, 3600),
    "ws_init_timeout": (0.1, 600),
    "ws_anonymous_seconds": (0, 3600),
}


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    redis_url: str | None = None
    data_dir: Path = Path(".followgraph")
    key_prefix: str = "fg:"
    appendfsync: str = "everysec"
    production: bool = False
    # Demo mode (`serve --demo`): GET /demo/token hands out tokens of demo users. Never in production.
    demo: bool = False
    log_level: str = "info"
    graphiql: bool = True
    introspection: bool = True
    suggestions: bool = True
    cors_origins: tuple[str, ...] = ()
    # The built web app and GraphiQL (`make web`); None: the source tree's web/dist.
    web_dist: Path | None = None
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_public_key_file: Path | None = None
    jwt_private_key_file: Path | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # Tokens of an identity provider: its issuer (OpenID Connect discovery) or its JWKS URL.
    oidc_issuer: str | None = None
    jwks_url: str | None = None
    jwt_subject_claim: str = "sub"
    jwt_scope_claim: str | None = None
    # Trusted documents (transport/persisted.py): off, allow or require, and their manifest.
    trusted_documents: str = "off"
    trusted_documents_file: Path | None = None
    max_body_bytes: int = 1_000_000
    max_batch: int = 0
    request_timeout: float = 10.0
    # A request's headers must arrive within this many seconds of its first byte (or of the connection).
    header_timeout: float = 5.0
    max_header_bytes: int = 32_768
    # Open connections per server process, WebSockets included; beyond it, requests and WebSocket
    # upgrades are answered 503, except /healthz and /readyz (transport/http_protocol.py).
    max_connections: int = 10_000
    # Serve /metrics on this port instead of the API's.
    metrics_port: int | None = None
    # Longest token lifetime accepted (exp - now), in seconds: 30 days.
    jwt_max_lifetime: int = 30 * 86400
    redis_timeout: float = 1.0
    # Replicas each write of the graph waits for before it answers (WAIT), and for how long in
    # seconds; a write they do not confirm is an error (store/redis/replicas.py). 0: none.
    write_replicas: int = 0
    write_replicas_timeout: float = 0.5
    # Pages and users' facts read from the replicas Sentinel names, or from a replica of each
    # cluster master (store/redis/replica_reads.py).
    read_from_replicas: bool = False
    # The SQL copy of the graph (server/sync.py): a SQLAlchemy URL (postgresql://, mysql://,
    # sqlite:///path); None: SQLite in the data directory; "off": no copy.
    database_url: str | None = field(default=None, repr=False)
    # Whether this server process also feeds the SQL copy (off when `followgraph sync` does apart).
    sync: bool = True
    sync_batch: int = 500
    # Whether this server process also feeds the search index (store/graph/search_index.py).
    search_index: bool = True
    # Approximate cap of the change log per stream (per slot on a cluster), in events.
    event_log_max: int = DEFAULT_LOG_CAP
    # Events every consumer has read are kept this long (seconds) for readers that catch up by id.
    event_log_keep: int = 86_400
    follow_rate_limit: str = "400/day"
    # Subscriptions over WebSocket (transport/subscriptions.py): operations per connection, sockets per
    # user per server process, events buffered per subscription before it is ended as fallen behind,
    # seconds between the server's pings (0: none), and how long a socket may wait to send
    # connection_init.
    ws_max_subscriptions: int = 10
    ws_max_connections_per_user: int = 20
    subscription_buffer: int = 1000
    ws_ping_seconds: float = 15.0
    ws_init_timeout: float = 10.0
    # Sockets without a token in connection_init: closed this many seconds after it (0: refused at
    # it), and at most this many per server process; anonymous sockets are what a flood opens.
    ws_anonymous_seconds: float = 10.0
    ws_max_anonymous_connections: int = 1000
    # Serve the schema as an Apollo Federation 2 subgraph (schema/federation.py): User an entity
    # keyed by userId, with _service and _entities.
    federation: bool = False
    # Run documents that already ran once from compiled plans (executor/compiler.py and executor/plan.py).
    compiled_queries: bool = True
    # Read pages and users' facts on one auto-pipelined connection (store/redis/channel.py), one per
    # master node on a cluster (store/redis/cluster_channel.py), rather than through the pooled client.
    read_channel: bool = True
    # On a cluster, users' profiles kept per master node by the read channel until Redis says they
    # changed (store/redis/tracking.py); 0 keeps none.
    profile_cache: int = DEFAULT_PROFILE_CACHE
    # The query limits (schema/limits.py QueryLimits, whose defaults these are).
    max_depth: int = 12
    max_aliases: int = 30
    max_directives: int = 5
    max_cost: int = 10_000
    max_tokens: int = 5_000
    max_page_size: int = 100
    max_errors: int = 10

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from FOLLOWGRAPH_* variables; keyword overrides (CLI options) win."""
        env = os.environ if environ is None else environ
        hints = get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(env_name(f.name))
            if raw not in (None, ""):
                values[f.name] = parser(hints[f.name])(f.name, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        production = bool(values.get("production", False))
        # Production turns the explorer, introspection and "did you mean" hints off unless asked for.
        for name in ("graphiql", "introspection", "suggestions"):
            values.setdefault(name, not production)
        settings = cls(**values)
        settings.validate()
        return settings

    def validate(self) -> None:
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if value is not None and not low <= value <= high:
                raise ConfigError(f"{named(name)}={value} is out of range: use {low} to {high}.")
        for name, words in CHOICES.items():
            if getattr(self, name) not in words:
                raise ConfigError(f"{named(name)}={getattr(self, name)!r} is not one of {', '.join(words)}.")
        if not self.key_prefix or any(c in self.key_prefix for c in "{}* "):
            raise ConfigError(
                f"{named('key_prefix')}={self.key_prefix!r} must be non-empty, without {{, }}, * or spaces."
            )
        if self.follow_rate_limit.lower() != "off":
            try:
                if len(parse_many(self.follow_rate_limit)) != 1:
                    raise ValueError("one rate only")
            except ValueError:
                raise ConfigError(
                    f"{named('follow_rate_limit')}={self.follow_rate_limit!r} is not one rate such as "
                    "'400/day', '20 per minute' or 'off'."
                ) from None
        if self.demo and self.production:
            raise ConfigError(
                f"--demo ({env_name('demo')}=1) hands out tokens to anyone who asks: "
                f"it cannot be combined with --production ({env_name('production')}=1)."
            )
        if self.database_url is not None and (sql := self.sql_url) is not None:
            from sqlalchemy.engine import make_url
            from sqlalchemy.exc import ArgumentError

            try:
                make_url(database_url(sql))
            except UnsupportedDatabaseError as exc:
                raise ConfigError(f"{named('database_url')}: {exc}") from None
            except (ArgumentError, ValueError) as exc:
                raise ConfigError(
                    f"{named('database_url')}={hidden_url(sql)!r} is not a database URL ({exc})."
                ) from None
        if self.redis_url is not None:
            scheme = self.redis_url.partition("://")[0].lower() if "://" in self.redis_url else ""
            if scheme not in REDIS_SCHEMES:
                raise ConfigError(
                    f"{named('redis_url')}={hidden_url(self.redis_url)!r} is not a Redis URL: use "
                    "redis://host:port/db, rediss:// (TLS), unix:///path/to/socket, "
                    "redis+cluster://host:port or redis+sentinel://host:port/service."
                )
        if self.write_replicas and self.write_replicas_timeout >= self.redis_timeout:
            raise ConfigError(
                f"{env_name('write_replicas_timeout')}={self.write_replicas_timeout:g} must be shorter than "
                f"{env_name('redis_timeout')}={self.redis_timeout:g}: a write waits that long for its "
                "replicas, within the time its Redis command has to answer."
            )
        if self.read_from_replicas:
            self._validate_replica_reads()
        if self.jwt_private_key_file is not None and self.jwt_public_key_file is None:
            raise ConfigError(
                f"{env_name('jwt_private_key_file')} is set without {env_name('jwt_public_key_file')}: "
                "RS256 needs the public key to check tokens (the private key only signs them)."
            )
        self._validate_identity_provider()
        if self.trusted_documents != "off" and self.trusted_manifest is None:
            from followgraph.transport.web import WEB_MANIFEST

            raise ConfigError(
                f"{named('trusted_documents')}={self.trusted_documents} needs the manifest: set "
                f"{env_name('trusted_documents_file')} to your clients' persisted-query manifest, or "
                f"build the web app (make web), whose {WEB_MANIFEST} is taken by default."
            )
        if self.jwt_secret is not None and self.jwt_public_key_file is not None:
            raise ConfigError(
                f"Set either {named('jwt_secret')} (HS256) "
                f"or {named('jwt_public_key_file')} (RS256), not both."
            )

    def _validate_replica_reads(self) -> None:
        url = self.redis_url or ""
        cluster = ClusterUrl.parse(url)
        if SentinelUrl.parse(url) is None and cluster is None:
            raise ConfigError(
                f"{named('read_from_replicas')} needs replicas to read from: a primary watched by "
                f"Sentinel or a Redis Cluster. Set {env_name('redis_url')} to "
                "redis+sentinel://host:port[,...]/service or redis+cluster://host:port[,...]."
            )
        if cluster is not None and cluster.tls:
            raise ConfigError(
                f"{named('read_from_replicas')} reads a cluster's replicas through connections of its "
                "own, which do not speak TLS: use redis+cluster://, or leave the reads on the masters."
            )
        if self.write_replicas < 1:
            raise ConfigError(
                f"{named('read_from_replicas')} needs {env_name('write_replicas')} of at least 1, and "
                "at least the number of replicas: a replica then has every write answered before a "
                "read, so a viewer's next page shows their follow."
            )

    def _validate_identity_provider(self) -> None:
        if self.oidc_issuer is not None and self.jwks_url is not None:
            raise ConfigError(f"Set {env_name('oidc_issuer')} or {env_name('jwks_url')}, not both.")
        provider = self.oidc_issuer or self.jwks_url
        if provider is None:
            return
        name = "oidc_issuer" if self.oidc_issuer is not None else "jwks_url"
        if not (provider.startswith("https://") or _is_local_http(provider)):
            raise ConfigError(
                f"{env_name(name)}={provider!r} must be an https:// URL (http:// only for localhost)."
            )
        if self.jwt_secret is not None or self.jwt_public_key_file is not None:
            raise ConfigError(
                f"Tokens come from the identity provider ({env_name(name)}): unset "
                f"{env_name('jwt_secret')} and {env_name('jwt_public_key_file')}."
            )
        if self.jwt_audience is None:
            raise ConfigError(
                f"{env_name('jwt_audience')} is required with an identity provider: the aud its "
                "tokens carry for this API (a token it issued for another application must not be "
                "taken here)."
            )

    @property
    def follow_limit(self) -> FollowLimit | None:
        """The follow rate limit; None when it is off."""
        return None if self.follow_rate_limit.lower() == "off" else FollowLimit.parse(self.follow_rate_limit)

    @property
    def replica_wait(self) -> ReplicaWait | None:
        """What each write waits for (store/redis/replicas.py); None when writes wait for no replica."""
        if self.write_replicas == 0:
            return None
        return ReplicaWait(self.write_replicas, self.write_replicas_timeout)

    @property
    def keys(self) -> Keys:
        """Where the graph and its change log live in Redis."""
        return Keys(self.key_prefix, log_cap=self.event_log_max)

    @property
    def sql_url(self) -> str | None:
        """The SQL copy's URL as given or defaulted; None when the copy is off."""
        if self.database_url is None:
            return f"sqlite:///{(self.data_dir / 'followgraph.sqlite3').resolve()}"
        if self.database_url.strip().lower() == "off":
            return None
        return self.database_url

    @property
    def query_limits(self) -> QueryLimits:
        from followgraph.schema import QueryLimits

        # Every QueryLimits field has a setting of the same name.
        return QueryLimits(**{f.name: getattr(self, f.name) for f in fields(QueryLimits)})

    @property
    def socket_limits(self) -> SocketLimits:
        """The WebSocket endpoint's caps and timers (transport/subscriptions.py)."""
        from followgraph.transport.subscriptions import SocketLimits

        return SocketLimits(
            max_subscriptions=self.ws_max_subscriptions,
            max_connections_per_user=self.ws_max_connections_per_user,
            ping_seconds=self.ws_ping_seconds,
            init_timeout=self.ws_init_timeout,
            anonymous_seconds=self.ws_anonymous_seconds,
            max_anonymous=self.ws_max_anonymous_connections,
        )

    @property
    def read_limits(self) -> ReadLimits:
        """How long and how much a client may take to send a request (transport/http_protocol.py)."""
        from followgraph.transport.http_protocol import ReadLimits

        return ReadLimits(
            header_timeout=self.header_timeout,
            # The app answers a late body itself (408) at request_timeout; the protocol closes
            # the connection a second later if the client is still sending.
            body_timeout=self.request_timeout + 1,
            max_header_bytes=self.max_header_bytes,
            max_connections=self.max_connections,
        )

    def persisted_queries(self) -> PersistedQueries:
        """Automatic persisted queries, with the documents of the manifest (the web app's build's
        when no file is named) known by id whatever the mode: the app sends its operations by id
        alone, and would otherwise wait a round trip for each one's PersistedQueryNotFound."""
        mode = TrustedMode(self.trusted_documents)
        manifest = self.trusted_manifest
        if manifest is None:
            return PersistedQueries()
        try:
            trusted = load_manifest(manifest)
        except ManifestError as exc:
            raise ConfigError(f"{env_name('trusted_documents_file')}={str(manifest)!r}: {exc}") from None
        return PersistedQueries(trusted=trusted, mode=mode)

    @property
    def trusted_manifest(self) -> Path | None:
        """The manifest of trusted documents: the file named, else the web app's build's own (its
        operations, which the build writes beside it), if built."""
        if self.trusted_documents_file is not None:
            return self.trusted_documents_file
        from followgraph.transport.web import WEB_MANIFEST, WEB_PROJECT

        built = (self.web_dist or WEB_PROJECT / "dist") / WEB_MANIFEST
        return built if built.is_file() else None

    def to_env(self) -> dict[str, str]:
        """FOLLOWGRAPH_* variables that make from_env() give these settings (for worker processes)."""
        env: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, bool):
                text = "1" if value else "0"
            elif isinstance(value, tuple):
                text = ",".join(value)
            else:
                text = str(value)
            env[env_name(f.name)] = text
        return env

    def auth_config(self) -> AuthConfig:
        """The JWT configuration: RS256 key files, an HS256 secret, or a secret kept in the data directory."""
        from followgraph.server.secret import load_or_create_secret
        from followgraph.transport.auth import AuthConfig, AuthConfigError
        from followgraph.transport.jwks import JwksKeys

        common: dict[str, Any] = {
            "issuer": self.jwt_issuer or self.oidc_issuer,
            "audience": self.jwt_audience,
            "max_lifetime_seconds": self.jwt_max_lifetime,
            "subject_claim": self.jwt_subject_claim,
            "scope_claim": self.jwt_scope_claim,
        }
        try:
            if self.oidc_issuer is not None or self.jwks_url is not None:
                keys = JwksKeys(issuer=self.oidc_issuer, jwks_url=self.jwks_url)
                return AuthConfig("JWKS", jwks=keys, **common)
            if self.jwt_public_key_file is not None:
                public = read_file(self.jwt_public_key_file, "jwt_public_key_file")
                private = None
                if self.jwt_private_key_file is not None:
                    private = read_file(self.jwt_private_key_file, "jwt_private_key_file")
                return AuthConfig("RS256", public_key=public, private_key=private, **common)
            if self.jwt_secret is not None:
                return AuthConfig("HS256", secret=self.jwt_secret.encode(), **common)
            return replace(load_or_create_secret(self.data_dir), **common)
        except AuthConfigError as exc:
            raise ConfigError(str(exc)) from None


def _is_local_http(url: str) -> bool:
    host = url.removeprefix("http://").split("/", 1)[0].rsplit(":", 1)[0]
    return url.startswith("http://") and host in ("localhost", "127.0.0.1", "[::1]")


def allowed(name: str) -> str | None:
    """The values setting `name` takes, when they are a range or a few words."""
    if name in RANGES:
        low, high = RANGES[name]
        return f"{low} to {high}"
    return ", ".join(CHOICES[name]) if name in CHOICES else None


def shown_default(name: str) -> str:
    """Setting `name`'s default as the command line's help and the docs show it."""
    if name in SHOWN_DEFAULTS:
        return SHOWN_DEFAULTS[name]
    value = getattr(Settings(), name)
    if value is None or value == ():
        return "none"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
