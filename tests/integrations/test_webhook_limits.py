"""Incoming webhooks obey the API's limits: the rate limit counts against the
authenticated account, a wrong key counts against the caller's address, and the body
size bound applies."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hubbub.api.body_limit import MAX_BODY_BYTES
from hubbub.clock import FakeClock
from hubbub.settings import Settings
from tests.helpers import assert_error, assert_success, running_env
from tests.integrations.conftest import Hook, make_hook
from tests.integrations.fixtures import fixture_body, fixture_headers

PUSH = fixture_body("github", "push")
PUSH_HEADERS = fixture_headers("github", "push")


@pytest.fixture
async def limited_hook(settings: Settings) -> AsyncIterator[Hook]:
    async with running_env(settings.with_(rate_limit=2), clock=FakeClock()) as env:
        yield await make_hook(env)


async def test_rate_limit_counts_against_the_bot(limited_hook: Hook) -> None:
    hook = limited_hook
    for remaining in ("1", "0"):
        response = await hook.post("github", PUSH, headers=PUSH_HEADERS, params={"stream": "dev"})
        assert_success(response)
        assert response.headers["X-RateLimit-Remaining"] == remaining
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, params={"stream": "dev"})
    assert_error(response, "API usage exceeded rate limit", status=429, code="RATE_LIMIT_HIT")


async def test_wrong_keys_count_against_the_address(limited_hook: Hook) -> None:
    hook = limited_hook
    for _ in range(2):
        response = await hook.post("github", PUSH, headers=PUSH_HEADERS, api_key="b" * 32)
        assert_error(response, "Invalid API key", status=401, code="INVALID_API_KEY")
    response = await hook.post("github", PUSH, headers=PUSH_HEADERS, api_key="b" * 32)
    assert response.status_code == 429


async def test_body_size_limit(hook: Hook) -> None:
    body = b'{"a": "' + b"x" * MAX_BODY_BYTES + b'"}'
    response = await hook.post("json", body, params={"stream": "dev"})
    assert response.status_code == 413
    assert await hook.message_count() == 0
