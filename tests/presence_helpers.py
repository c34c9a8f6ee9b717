"""The presence tests' clock: a fake one, started at a fixed moment and moved by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hubbub.clock import FakeClock
from hubbub.settings import Settings
from tests.helpers import TestEnv, running_env

START = 1_700_000_000


@pytest.fixture(name="env")
async def presence_env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(START + 0.25)) as test_env:
        yield test_env


def advance(env: TestEnv, seconds: float) -> None:
    clock = env.services.clock
    assert isinstance(clock, FakeClock)
    clock.advance(seconds)
