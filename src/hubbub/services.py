"""The composition root: the long-lived pieces a running server (or a command) uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hubbub.clock import Clock, SystemClock
from hubbub.db.engine import Database
from hubbub.ratelimit import MemoryRateLimiter, NoRateLimiter, RateLimiter, RedisRateLimiter
from hubbub.settings import Settings


@dataclass
class Services:
    settings: Settings
    db: Database
    clock: Clock
    rate_limiter: RateLimiter
    redis: Any = None

    async def close(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.dispose()


def build_rate_limiter(settings: Settings, clock: Clock, redis: Any) -> RateLimiter:
    if settings.rate_limit == 0:
        return NoRateLimiter()
    if redis is not None:
        return RedisRateLimiter(
            redis, settings.rate_limit, settings.rate_limit_window_seconds, clock
        )
    return MemoryRateLimiter(settings.rate_limit, settings.rate_limit_window_seconds, clock)


def build_services(settings: Settings, *, clock: Clock | None = None) -> Services:
    clock = clock or SystemClock()
    redis = None
    if settings.redis_url:
        from redis.asyncio import Redis

        redis = Redis.from_url(settings.redis_url)
    return Services(
        settings=settings,
        db=Database(settings.effective_database_url),
        clock=clock,
        rate_limiter=build_rate_limiter(settings, clock, redis),
        redis=redis,
    )
