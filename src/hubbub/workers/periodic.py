"""Background loops a server process runs beside its requests."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from hubbub.services import Services

logger = logging.getLogger("hubbub.workers")


async def run_every(seconds: float, job: Callable[[], Awaitable[object]], name: str) -> None:
    """Run ``job`` every ``seconds`` until cancelled; a failing run is logged, not fatal."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await job()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("background job %s failed", name)


async def expire_event_queues(services: Services) -> int:
    removed = await services.bus.expire_queues(services.clock.now())
    if removed:
        logger.info("removed %d idle event queues", removed)
    return removed


def start_background_jobs(services: Services) -> list[asyncio.Task[None]]:
    return [
        asyncio.create_task(
            run_every(
                services.settings.queue_gc_interval_seconds,
                lambda: expire_event_queues(services),
                "event queue expiry",
            )
        )
    ]
