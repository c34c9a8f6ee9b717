"""The composition root: the long-lived pieces a running server (or a command) uses."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.clock import Clock, SystemClock
from hubbub.db.engine import Database
from hubbub.events.bus import EventBus, MemoryEventBus, Notice
from hubbub.events.durable_queues import DurableQueues
from hubbub.events.outbox import store_outbox
from hubbub.login_limits import LoginGuard, build_login_guard
from hubbub.outages import OutageLog
from hubbub.queries.people import PeopleCache
from hubbub.queries.presence import PresenceAnswers
from hubbub.queries.subscriber_cache import SubscriberCache
from hubbub.ratelimit import MemoryRateLimiter, NoRateLimiter, RateLimiter, RedisRateLimiter
from hubbub.rendering import RealmDescriptions
from hubbub.settings import Settings
from hubbub.transaction import Tx

logger = logging.getLogger("hubbub.events")

if TYPE_CHECKING:  # the Redis client is imported only by servers that use it (idle memory)
    from redis.asyncio import Redis


@dataclass
class Services:
    settings: Settings
    db: Database
    clock: Clock
    rate_limiter: RateLimiter
    bus: EventBus
    # Limits on password checks (``login_limits``).
    login_guard: LoginGuard
    redis: Redis | None = None
    presence: PresenceAnswers = field(default_factory=PresenceAnswers)
    people: PeopleCache = field(default_factory=PeopleCache)
    subscribers: SubscriberCache = field(default_factory=SubscriberCache)
    realm_descriptions: RealmDescriptions = field(default_factory=RealmDescriptions)
    # Whether the last publish failed for an unreachable bus: one log line per outage.
    bus_down: bool = False
    # The database, Redis or disk failures requests are meeting (one log line each).
    outages: OutageLog = field(default_factory=OutageLog)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Tx]:
        """A write transaction whose events are published once it has committed."""
        async with self.db.write() as conn:
            tx = Tx(conn, self.subscribers)
            yield tx
            tx.notices = await self.journal(conn, tx.notices)
        # A realm_user event means a user changed: the presence answers name users.
        self.presence.forget(n.realm_id for n in tx.notices if n.event["type"] == "realm_user")
        self.presence.written(tx.presence_writes)
        await self.publish_committed(tx.notices, tx.stale_credentials)
        for job in tx.after_commit:
            await job()

    async def journal(self, conn: AsyncConnection, notices: list[Notice]) -> list[Notice]:
        """On SQLite, keep the events of the write transaction ``conn`` in it, for the
        event queues to survive a crash (``events/durable_queues.py``); the notices to
        publish once it has committed."""
        if not notices or not self.journaling:
            return notices
        assert isinstance(self.bus, MemoryEventBus)
        return await self.bus.journal(conn, notices)

    @property
    def journaling(self) -> bool:
        return isinstance(self.bus, MemoryEventBus) and self.bus.journaling

    async def publish_committed(self, notices: list[Notice], stale_credentials: set[int]) -> None:
        """Publish a committed transaction's events (credentials first). When the bus is
        unreachable (Redis down), the change is committed all the same: its events go to
        the event outbox, which every server process drains onto the bus once it answers
        again, so the write is acknowledged and no open queue misses its events."""
        try:
            if stale_credentials:
                await self.bus.forget_credentials(sorted(stale_credentials))
            if notices:
                if self.journaling and any(n.seq is None for n in notices):
                    async with self.db.write() as conn:
                        notices = await self.journal(conn, notices)
                await self.bus.publish(notices)
        except self.bus_errors() as exc:
            if not self.bus_down:
                logger.warning("event bus unreachable (%s); keeping events in the outbox", exc)
                self.bus_down = True
            async with self.db.write() as conn:
                await store_outbox(conn, notices, stale_credentials, self.clock.now())
            return
        self.bus_down = False

    def bus_errors(self) -> tuple[type[BaseException], ...]:
        """What the bus raises when its server cannot be reached (the in-memory bus cannot
        fail that way)."""
        if self.redis is None:
            return ()
        from redis.exceptions import RedisError

        return (RedisError, OSError)

    async def start(self) -> None:
        await self.bus.start()

    async def close(self) -> None:
        await self.bus.close()
        if self.redis is not None:
            await self.redis.aclose()
        await self.db.dispose()


def build_bus(
    settings: Settings, clock: Clock, redis: Redis | None, db: Database | None = None
) -> EventBus:
    if redis is not None:
        from hubbub.events.redis_bus import RedisEventBus

        return RedisEventBus(
            redis,
            clock,
            heartbeat_seconds=settings.heartbeat_seconds,
            namespace=settings.redis_namespace,
            max_queues_per_user=settings.max_queues_per_user,
            max_queue_bytes=settings.max_queue_kib * 1024,
        )
    return MemoryEventBus(
        clock,
        state_file=settings.data_dir / "event_queues.json" if settings.persist_queues else None,
        # On SQLite (one writer) the queues are kept in the database as they change.
        durable=(
            DurableQueues(db)
            if db is not None and settings.persist_queues and db.serializes_writes
            else None
        ),
        heartbeat_seconds=settings.heartbeat_seconds,
        max_queues_per_user=settings.max_queues_per_user,
        max_queue_bytes=settings.max_queue_kib * 1024,
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
        from hubbub.redis_connection import connect_redis

        redis = connect_redis(settings.redis_url)
    db = Database(settings.effective_database_url)
    return Services(
        settings=settings,
        db=db,
        clock=clock,
        rate_limiter=build_rate_limiter(settings, clock, redis),
        bus=build_bus(settings, clock, redis, db),
        login_guard=build_login_guard(
            settings.login_attempts_per_address, clock, redis, settings.redis_namespace
        ),
        redis=redis,
    )
