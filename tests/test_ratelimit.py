"""Rate limiting: Zulip's 429 shape and headers, in memory and shared through Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hubbub.clock import FakeClock
from hubbub.ratelimit import MemoryRateLimiter, RedisRateLimiter
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env, with_test_redis

REDIS_ENV = "HUBBUB_TEST_REDIS_URL"


@pytest.fixture(params=["memory", "redis"])
async def limited_env(
    request: pytest.FixtureRequest, settings: Settings
) -> AsyncIterator[tuple[TestEnv, FakeClock]]:
    clock = FakeClock()
    settings = settings.with_(rate_limit=3)
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings, clock=clock) as env:
        expected = RedisRateLimiter if request.param == "redis" else MemoryRateLimiter
        assert isinstance(env.services.rate_limiter, expected)
        yield env, clock


async def test_rate_limit_per_user(limited_env: tuple[TestEnv, FakeClock]) -> None:
    env, clock = limited_env
    client = env.client("hamlet")
    for remaining in (2, 1, 0):
        response = await client.get("/users/me")
        assert_success(response)
        assert response.headers["X-RateLimit-Limit"] == "3"
        assert response.headers["X-RateLimit-Remaining"] == str(remaining)
        assert int(response.headers["X-RateLimit-Reset"]) >= int(clock.now())
    clock.advance(10)
    response = await client.get("/users/me")
    body = assert_error(
        response, "API usage exceeded rate limit", status=429, code="RATE_LIMIT_HIT"
    )
    assert body["retry-after"] == pytest.approx(50, abs=0.01)
    assert float(response.headers["Retry-After"]) == pytest.approx(50, abs=0.01)
    assert response.headers["X-RateLimit-Remaining"] == "0"
    # Another user has a budget of their own.
    assert_success(await env.client("othello").get("/users/me"))
    clock.advance(51)
    assert_success(await client.get("/users/me"))


async def test_rate_limit_unauthenticated_by_address(
    limited_env: tuple[TestEnv, FakeClock],
) -> None:
    env, _ = limited_env
    client = env.client()
    for _ in range(3):
        assert_success(await client.get("/server_settings"))
    assert_error(
        await client.get("/server_settings"),
        "API usage exceeded rate limit",
        status=429,
        code="RATE_LIMIT_HIT",
    )


async def test_rate_limit_off_sends_no_headers(env: TestEnv) -> None:
    response = await env.client("hamlet").get("/users/me")
    assert_success(response)
    assert "X-RateLimit-Limit" not in response.headers


async def test_failed_authentication_is_rate_limited_by_address(
    limited_env: tuple[TestEnv, FakeClock],
) -> None:
    env, _ = limited_env
    bad = env.client(headers={"Authorization": "Basic " + "eDp4"})
    for _ in range(3):
        assert (await bad.get("/users/me")).status_code == 401
    assert_error(
        await bad.get("/users/me"),
        "API usage exceeded rate limit",
        status=429,
        code="RATE_LIMIT_HIT",
    )


async def test_memory_limiter_forgets_idle_keys() -> None:
    clock = FakeClock()
    limiter = MemoryRateLimiter(3, 60.0, clock)
    await limiter.hit("ip:1")
    clock.advance(61)
    limiter._sweep(clock.monotonic())
    assert limiter._hits == {}
