"""Background loops a server process runs beside its requests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from hubbub.actions import send_retries
from hubbub.actions.stream_activity import do_mark_inactive_streams
from hubbub.queries.realms import list_active_realms
from hubbub.services import Services
from hubbub.workers import push_delivery, retention, upload_cleanup
from hubbub.workers.event_outbox import OUTBOX_INTERVAL_SECONDS, relay_event_outbox
from hubbub.workers.scheduled_delivery import run_scheduled_delivery

logger = logging.getLogger("hubbub.workers")

T = TypeVar("T")


async def run_every(
    seconds: float,
    job: Callable[[], Awaitable[T]],
    name: str,
    *,
    first: float | None = None,
    pace: Callable[[T | None, float], float] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Run ``job`` every ``seconds`` (the first time after ``first`` seconds, if given)
    until cancelled; a failing run is logged, not fatal. ``pace``, given a run's result
    (None if it failed) and the wait before it, sets the wait before the next instead.
    (``sleep``: the wait itself, replaced in tests.)"""
    delay = seconds if first is None else first
    while True:
        await sleep(delay)
        result: T | None = None
        try:
            result = await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("background job %s failed", name)
        delay = seconds if pace is None else pace(result, delay)


def checkpoint_pace(services: Services) -> Callable[[int | None, float], float]:
    """The checkpoint job's ``pace``: it follows the WAL's growth, from the frames each
    checkpoint found (``Database.checkpoint_delay``)."""

    def pace(frames: int | None, waited: float) -> float:
        logger.debug("checkpoint after %.2f s: %s frames", waited, frames)
        return services.db.checkpoint_delay(frames or 0, waited)

    return pace


async def prune_send_keys(services: Services) -> int:
    async with services.db.write() as conn:
        return await send_retries.prune_send_keys(conn, services.clock.now())


async def mark_inactive_streams(services: Services) -> int:
    """Clear ``is_recently_active`` of the streams that went quiet (feature level 323),
    realm by realm, each in its own transaction; how many streams changed."""
    now = services.clock.now()
    async with services.db.read() as conn:
        realms = await list_active_realms(conn)
    marked = 0
    for target in realms:
        async with services.write() as tx:
            marked += len(await do_mark_inactive_streams(tx, target, now))
    return marked


async def expire_event_queues(services: Services) -> int:
    removed = await services.bus.expire_queues(services.clock.now())
    if removed:
        logger.info("removed %d idle event queues", removed)
    return removed


# How often the clock-driven jobs look for due work (each run is a cheap indexed query
# when nothing is due). Push notifications are checked often so that they arrive within
# seconds; retention and unclaimed uploads work in day-sized units.
PUSH_DELIVERY_INTERVAL_SECONDS = 2.0
RETENTION_INTERVAL_SECONDS = 3600.0
UPLOAD_CLEANUP_INTERVAL_SECONDS = 3600.0
# Planner statistics: soon after start (a database seeded or restored while the server was
# down has none), then daily.
STATISTICS_FIRST_SECONDS = 10.0
STATISTICS_INTERVAL_SECONDS = 86400.0
# Streams become inactive over months: a daily look, as Zulip's daily cron job.
INACTIVE_STREAMS_INTERVAL_SECONDS = 86400.0


def start_background_jobs(services: Services) -> list[asyncio.Task[None]]:
    jobs: list[tuple[float, Callable[[], Awaitable[object]], str]] = [
        (
            services.settings.queue_gc_interval_seconds,
            lambda: expire_event_queues(services),
            "event queue expiry",
        ),
        (PUSH_DELIVERY_INTERVAL_SECONDS, lambda: push_delivery.run_once(services), "push"),
        (RETENTION_INTERVAL_SECONDS, lambda: retention.run_once(services), "retention"),
        (RETENTION_INTERVAL_SECONDS, lambda: prune_send_keys(services), "send keys"),
        (
            UPLOAD_CLEANUP_INTERVAL_SECONDS,
            lambda: upload_cleanup.run_once(services),
            "unclaimed uploads",
        ),
        (
            INACTIVE_STREAMS_INTERVAL_SECONDS,
            lambda: mark_inactive_streams(services),
            "inactive streams",
        ),
    ]
    tasks = [asyncio.create_task(run_every(every, job, name)) for every, job, name in jobs]
    # Events of commands run beside the server (``hubbub create-user``): the first relay
    # at once, so that what was left while the server was down reaches the restored
    # queues before new clients register.
    outbox = run_every(
        OUTBOX_INTERVAL_SECONDS, lambda: relay_event_outbox(services), "event outbox", first=0
    )
    tasks.append(asyncio.create_task(outbox))
    tasks.append(
        asyncio.create_task(
            run_every(
                STATISTICS_INTERVAL_SECONDS,
                services.db.refresh_statistics,
                "planner statistics",
                first=STATISTICS_FIRST_SECONDS,
            )
        )
    )
    if services.db.checkpoint_interval is not None:
        checkpoints = run_every(
            services.db.checkpoint_interval,
            services.db.checkpoint,
            "checkpoint",
            pace=checkpoint_pace(services),
        )
        tasks.append(asyncio.create_task(checkpoints))
    if services.db.settle_interval is not None:
        settling = run_every(
            services.db.settle_interval, services.db.settle_staged, "staged user_message rows"
        )
        tasks.append(asyncio.create_task(settling))
    # Scheduled messages keep their own clock: they are due to the second, not per interval.
    tasks.append(asyncio.create_task(run_scheduled_delivery(services)))
    return tasks
