"""Event tests run on every database and on both buses (Redis when HUBBUB_TEST_REDIS_URL
is set): the ``env`` fixture here replaces the shared one with a bus-parametrized copy."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from hubbub.app import create_app
from hubbub.db.migrate import upgrade
from hubbub.events.redis_bus import RedisEventBus
from hubbub.services import build_services
from hubbub.settings import Settings
from tests.helpers import TestEnv

REDIS_ENV = "HUBBUB_TEST_REDIS_URL"


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    services = build_services(settings)
    redis = None
    if request.param == "redis":
        url = os.environ.get(REDIS_ENV)
        if not url:
            await services.close()
            pytest.skip(f"Redis variant: set {REDIS_ENV} to run it")
        redis = Redis.from_url(url)
        services.bus = RedisEventBus(
            redis,
            services.clock,
            heartbeat_seconds=settings.heartbeat_seconds,
            namespace=f"test-{uuid.uuid4().hex}",
        )
    await upgrade(services.db)
    await services.start()
    test_env = TestEnv(create_app(settings, services=services), services)
    await test_env.setup()
    try:
        yield test_env
    finally:
        await services.close()
        if redis is not None:
            await redis.aclose()
