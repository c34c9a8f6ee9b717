"""Event tests run on every database and on both buses (Redis when HUBBUB_TEST_REDIS_URL
is set): the ``env`` fixture here is the shared ``bus_env``."""

from __future__ import annotations

import pytest

from tests.helpers import TestEnv


@pytest.fixture
def env(bus_env: TestEnv) -> TestEnv:
    return bus_env
