"""The presence tests' clock (a fake one, started at a fixed moment and moved by hand with
``env.advance``) and their presence updates."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from hubbub.clock import FakeClock
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_success, running_env

START = 1_700_000_000
PRESENCE = "/users/me/presence"


@pytest.fixture(name="env")
async def presence_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(START + 0.25)) as test_env:
        yield test_env


async def ping(env: TestEnv, user: str, status: str = "active", **params: Any) -> dict[str, Any]:
    """``POST /users/me/presence`` as ``user``; the success body."""
    return assert_success(await env.client(user).post(PRESENCE, {"status": status, **params}))
