"""Fixtures of the security suite: the app with the test settings, as a Served helper."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from followgraph.server.settings import Settings
from tests.security.helpers import serve
from tests.served import Served


@pytest.fixture
async def served(real_redis: aioredis.Redis, settings: Settings) -> AsyncIterator[Served]:
    """The app with the test settings (HS256 test secret, default limits) on the real Redis server."""
    async with serve(settings, real_redis) as app:
        yield app
