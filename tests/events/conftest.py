"""Event tests run on every database and on both buses (Redis when HUBBUB_TEST_REDIS_URL
is set): the ``env`` fixture here replaces the shared one with a bus-parametrized copy."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hubbub.settings import Settings
from tests.helpers import TestEnv, running_env, with_test_redis


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings) as test_env:
        yield test_env
