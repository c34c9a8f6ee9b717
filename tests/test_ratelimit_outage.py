"""A Redis outage loosens the rate limits instead of failing requests: each limiter counts
in its own process until Redis answers again (``ratelimit.RedisRateLimiter``), and the
log says so once per outage, not once per request."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from hubbub.clock import FakeClock
from hubbub.errors import RateLimitedError
from hubbub.ratelimit import REDIS_RETRY_SECONDS, RedisRateLimiter
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env, with_test_redis
from tests.tcp_cut import CuttableRelay, cuttable_relay


@pytest.fixture
async def relay(settings: Settings) -> AsyncIterator[CuttableRelay]:
    url = urlsplit(with_test_redis(settings).redis_url)
    async with cuttable_relay(url.hostname or "127.0.0.1", url.port or 6379) as cut:
        yield cut


@pytest.fixture
async def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def env(settings: Settings, relay: CuttableRelay, clock: FakeClock) -> AsyncIterator[TestEnv]:
    redis = with_test_redis(settings.with_(rate_limit=3))
    url = urlsplit(redis.redis_url)
    through_relay = url._replace(netloc=f"127.0.0.1:{relay.port}").geturl()
    async with running_env(redis.with_(redis_url=through_relay), clock=clock) as test_env:
        assert isinstance(test_env.services.rate_limiter, RedisRateLimiter)
        yield test_env
        # The namespace's keys are deleted through the relay.
        relay.restore()


def _outage_lines(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "hubbub.ratelimit" and text in r.getMessage()]


async def test_requests_are_limited_locally_while_redis_is_cut(
    env: TestEnv, relay: CuttableRelay, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    client = env.client("hamlet")
    assert_success(await client.get("/users/me"))
    relay.cut()
    for remaining in (2, 1, 0):
        response = await client.get("/users/me")
        assert_success(response)
        assert response.headers["X-RateLimit-Remaining"] == str(remaining)
    # The local window still limits.
    assert_error(
        await client.get("/users/me"),
        "API usage exceeded rate limit",
        status=429,
        code="RATE_LIMIT_HIT",
    )
    # Past the retry interval Redis is asked again, and is still cut: no second line.
    clock.advance(REDIS_RETRY_SECONDS + 1)
    assert_success(await env.client("othello").get("/users/me"))
    assert len(_outage_lines(caplog, "Redis unreachable")) == 1
    relay.restore()
    clock.advance(REDIS_RETRY_SECONDS + 1)
    response = await env.client("iago").get("/users/me")
    assert_success(response)
    assert len(_outage_lines(caplog, "reachable again")) == 1
    # Shared counting again: hamlet's one request before the cut is still in Redis.
    response = await client.get("/users/me")
    assert response.headers["X-RateLimit-Remaining"] == "1"


async def test_login_limits_hold_while_redis_is_cut(
    env: TestEnv, relay: CuttableRelay, caplog: pytest.LogCaptureFixture
) -> None:
    relay.cut()
    guard = env.services.login_guard
    key = guard.account_key(env.realm.id, "hamlet@zulip.com")
    for _ in range(5):
        await guard.count_attempt("10.0.0.1", key)
    # The account's five attempts are used up, from whichever address.
    with pytest.raises(RateLimitedError):
        await guard.count_attempt("10.0.0.2", key)
    await guard.succeeded(key)
    await guard.count_attempt("10.0.0.3", key)
    # The request limiter and both login limits share one outage line.
    response = await env.client("hamlet").get("/users/me")
    assert_success(response)
    assert len(_outage_lines(caplog, "Redis unreachable")) == 1
