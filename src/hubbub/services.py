"""The composition root: the long-lived pieces a running server (or a command) uses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hubbub.clock import Clock, SystemClock
from hubbub.db.engine import Database
from hubbub.events.bus import EventBus, MemoryEventBus
from hubbub.queries.kept_subscribers import KeptSubscribers
from hubbub.queries.people import KeptPeople
from hubbub.queries.presence import PresenceAnswers
from hubbub.ratelimit import MemoryRateLimiter, NoRateLimiter, RateLimiter, RedisRateLimiter
from hubbub.settings import Settings
from hubbub.transaction import Tx

if TYPE_CHECKING:  # the Redis client is imported only by servers that use it (idle memory)
    from hubbub.redis_client import Redis


@dataclass
class Services:
    settings: Settings
    db: Database
    clock: Clock
    rate_limiter: RateLimiter
    bus: EventBus
    redis: Redis | None = None
    presence: PresenceAnswers = field(default_factory=PresenceAnswers)
    people: KeptPeople = field(default_factory=KeptPeople)
    subscribers: KeptSubscribers = field(default_factory=KeptSubscribers)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """A write transaction whose events are published once it has committed."""
        async with self.db.write() as conn:
            tx = Tx(conn, self.subscribers)
            yield tx
        # A realm_user event means a user changed: the presence answers name users.
        self.presence.forget(n.realm_id for n in tx.notices if n.event["type"] == "realm_user")
        self.presence.written(tx.presence_writes)
        if tx.stale_credentials:
            await self.bus.forget_credentials(sorted(tx.stale_credentials))
        if tx.notices:
            await self.bus.publish(tx.notices)
        for job in tx.after_commit:
            await job()

    async def start(self) -> None:
        await self.bus.start()

    async def close(self) -> None:
        await self.bus.close()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.dispose()


def build_bus(settings: Settings, clock: Clock, redis: Redis | None) -> EventBus:
    if redis is not None:
        from hubbub.events.redis_bus import RedisEventBus

        return RedisEventBus(
            redis,
            clock,
            heartbeat_seconds=settings.heartbeat_seconds,
            namespace=settings.redis_namespace,
        )
    return MemoryEventBus(
        clock,
        state_file=settings.data_dir / "event_queues.json" if settings.persist_queues else None,
        heartbeat_seconds=settings.heartbeat_seconds,
    )


def build_rate_limiter(settings: Settings, clock: Clock, redis: Redis | None) -> RateLimiter:
    if settings.rate_limit == 0:
        return NoRateLimiter()
    if redis is not None:
        return RedisRateLimiter(
            redis,
            settings.rate_limit,
            settings.rate_limit_window_seconds,
            clock,
            namespace=settings.redis_namespace,
        )
    return MemoryRateLimiter(settings.rate_limit, settings.rate_limit_window_seconds, clock)


def build_services(settings: Settings, *, clock: Clock | None = None) -> Services:
    clock = clock or SystemClock()
    redis: Redis | None = None
    if settings.redis_url:
        from hubbub.redis_client import Redis

        redis = Redis.from_url(settings.redis_url)
    return Services(
        settings=settings,
        db=Database(settings.effective_database_url),
        clock=clock,
        rate_limiter=build_rate_limiter(settings, clock, redis),
        bus=build_bus(settings, clock, redis),
        redis=redis,
    )
