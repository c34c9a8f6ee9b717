"""Background loops a server process runs beside its requests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from hubbub.services import Services
from hubbub.workers import push_delivery, retention, upload_cleanup
from hubbub.workers.scheduled_delivery import run_scheduled_delivery

logger = logging.getLogger("hubbub.workers")


async def run_every(
    seconds: float, job: Callable[[], Awaitable[object]], name: str, *, first: float | None = None
) -> None:
    """Run ``job`` every ``seconds`` (the first time after ``first`` seconds, if given)
    until cancelled; a failing run is logged, not fatal."""
    delay = seconds if first is None else first
    while True:
        await asyncio.sleep(delay)
        delay = seconds
        try:
            await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("background job %s failed", name)


async def prune_send_keys(services: Services) -> int:
    from hubbub.actions.send_retries import prune_send_keys as prune

    async with services.db.write() as conn:
        return await prune(conn, services.clock.now())


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
    ]
    tasks = [asyncio.create_task(run_every(every, job, name)) for every, job, name in jobs]
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
        tasks.append(
            asyncio.create_task(
                run_every(services.db.checkpoint_interval, services.db.checkpoint, "checkpoint")
            )
        )
    # Scheduled messages keep their own clock: they are due to the second, not per interval.
    tasks.append(asyncio.create_task(run_scheduled_delivery(services)))
    return tasks
