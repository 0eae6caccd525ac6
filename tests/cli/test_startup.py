"""The command line loads what its commands share, not the server: `followgraph --help`, an import
or an export does not start by importing the schema, the SQL copy's libraries, tokens or uvicorn
(each command that needs one imports it itself)."""

from __future__ import annotations

import json
import subprocess
import sys

# Libraries only some commands use, and the packages of the server that bring them.
SERVER_ONLY = (
    "strawberry",
    "graphql",
    "sqlalchemy",
    "alembic",
    "jwt",
    "httpx",
    "uvicorn",
    "starlette.routing",
    "followgraph.schema",
    "followgraph.server.app",
    "followgraph.server.sync",
)

PROBE = f"""
import json, sys
import followgraph.cli.main
from followgraph.server.settings import Settings
Settings.from_env({{}})
print(json.dumps(sorted(name for name in {SERVER_ONLY!r} if name in sys.modules)))
"""


def test_the_command_line_and_its_settings_do_not_load_the_server() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_the_settings_still_build_the_servers_parts() -> None:
    from followgraph.schema import QueryLimits
    from followgraph.server.settings import Settings
    from followgraph.transport.auth import DEFAULT_MAX_LIFETIME

    settings = Settings()
    # The defaults the settings write out are those of the parts they configure.
    assert settings.query_limits == QueryLimits()
    assert settings.jwt_max_lifetime == DEFAULT_MAX_LIFETIME
    assert settings.read_limits.header_timeout == settings.header_timeout
    assert settings.socket_limits.max_subscriptions == settings.ws_max_subscriptions
