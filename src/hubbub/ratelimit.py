"""Per-key request rate limiting over a sliding window, as Zulip does (200 per minute).

The in-memory limiter serves one process. With several worker processes the limit must be
shared; ``RedisRateLimiter`` keeps each key's recent request times in a Redis sorted set.
When Redis cannot be reached it counts in this process instead, so that an outage of Redis
loosens the limit (each worker counts on its own) rather than failing every request.
"""

from __future__ import annotations

import logging
import uuid
import weakref
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hubbub.clock import Clock

if TYPE_CHECKING:  # the Redis client is imported only by servers that use it (idle memory)
    from redis.asyncio import Redis

logger = logging.getLogger("hubbub.ratelimit")

# Seconds the limiter counts locally after Redis failed before it asks Redis again: a
# silently unreachable Redis costs a connection timeout per attempt, not per request.
REDIS_RETRY_SECONDS = 5.0


class _RedisOutage:
    """Whether the limiters of one Redis client found it unreachable, shared by all of
    them (the request limiter and the login limits) so that an outage is logged once."""

    def __init__(self) -> None:
        # The monotonic time after which Redis is tried again; None while it works.
        self.retry_at: float | None = None


_OUTAGES: weakref.WeakKeyDictionary[object, _RedisOutage] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class RateLimitResult:
    allowed: bool
    limit: int
    remaining: int
    # Seconds until the oldest request in the window leaves it.
    reset_after: float


class RateLimiter(Protocol):
    async def hit(self, key: str) -> RateLimitResult: ...

    async def clear(self, key: str) -> None:
        """Forget the key's recorded requests (a login that succeeded, as in Zulip)."""


class NoRateLimiter:
    async def hit(self, key: str) -> RateLimitResult:
        return RateLimitResult(True, 0, 0, 0.0)

    async def clear(self, key: str) -> None:
        return None


class MemoryRateLimiter:
    # Forget keys idle for a whole window every this many hits, so memory stays bounded
    # by the number of recently active users and addresses.
    SWEEP_EVERY = 10_000

    def __init__(self, limit: int, window: float, clock: Clock) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._hits: dict[str, deque[float]] = {}
        self._calls = 0

    def _sweep(self, now: float) -> None:
        stale = [k for k, hits in self._hits.items() if not hits or hits[-1] <= now - self.window]
        for key in stale:
            del self._hits[key]

    async def hit(self, key: str) -> RateLimitResult:
        now = self.clock.monotonic()
        self._calls += 1
        if self._calls % self.SWEEP_EVERY == 0:
            self._sweep(now)
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return RateLimitResult(False, self.limit, 0, hits[0] + self.window - now)
        hits.append(now)
        reset = hits[0] + self.window - now
        return RateLimitResult(True, self.limit, self.limit - len(hits), reset)

    async def clear(self, key: str) -> None:
        self._hits.pop(key, None)


class RedisRateLimiter:
    """The same sliding window, shared by every worker through Redis; a local window
    while Redis is unreachable, with one log line when that starts and one when it ends."""

    def __init__(
        self, redis: Redis, limit: int, window: float, clock: Clock, namespace: str = "hubbub"
    ) -> None:
        self.redis = redis
        self.limit = limit
        self.window = window
        self.clock = clock
        self.namespace = namespace
        self.fallback = MemoryRateLimiter(limit, window, clock)
        self._outage = _OUTAGES.setdefault(redis, _RedisOutage())

    def _name(self, key: str) -> str:
        return f"{self.namespace}:ratelimit:{key}"

    def _use_fallback(self) -> bool:
        retry_at = self._outage.retry_at
        return retry_at is not None and self.clock.monotonic() < retry_at

    def _failed(self, exc: Exception) -> None:
        if self._outage.retry_at is None:
            logger.error(
                "rate limiter: Redis unreachable (%s); counting in this process until it is back",
                exc,
            )
        self._outage.retry_at = self.clock.monotonic() + REDIS_RETRY_SECONDS

    def _answered(self) -> None:
        if self._outage.retry_at is not None:
            logger.warning("rate limiter: Redis reachable again; sharing limits through it")
            self._outage.retry_at = None

    async def clear(self, key: str) -> None:
        from hubbub.redis_connection import UNREACHABLE

        await self.fallback.clear(key)
        if self._use_fallback():
            return
        try:
            await self.redis.delete(self._name(key))
        except UNREACHABLE as exc:
            self._failed(exc)
            return
        self._answered()

    async def hit(self, key: str) -> RateLimitResult:
        from hubbub.redis_connection import UNREACHABLE

        if self._use_fallback():
            return await self.fallback.hit(key)
        try:
            result = await self._shared_hit(key)
        except UNREACHABLE as exc:
            self._failed(exc)
            return await self.fallback.hit(key)
        self._answered()
        return result

    async def _shared_hit(self, key: str) -> RateLimitResult:
        # Neither step is resent after a broken connection (``redis_connection``): the
        # second would count the request twice; the request is then counted locally.
        now = self.clock.now()
        name = self._name(key)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zremrangebyscore(name, "-inf", now - self.window)
            pipe.zcard(name)
            pipe.zrange(name, 0, 0, withscores=True)
            _, count, oldest = await pipe.execute()
        oldest_time = float(oldest[0][1]) if oldest else now  # [(member, score)]
        if count >= self.limit:
            return RateLimitResult(False, self.limit, 0, oldest_time + self.window - now)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(name, {f"{now}:{uuid.uuid4().hex[:8]}": now})
            pipe.expire(name, int(self.window) + 1)
            await pipe.execute()
        return RateLimitResult(
            True, self.limit, self.limit - count - 1, oldest_time + self.window - now
        )
