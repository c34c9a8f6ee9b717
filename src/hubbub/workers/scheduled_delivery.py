"""The loop that sends scheduled messages when they fall due.

Zulip checks once a minute; hubbub sends within a second of the due time. The loop sleeps
until the next due time, at most ``MAX_SLEEP_SECONDS`` (so that rows scheduled through
another worker process are seen), and is woken early when this process schedules or moves
a message to a sooner time. Each message is claimed and sent in its own transaction (see
``actions/scheduled_message_delivery.py``): with several workers on one PostgreSQL
database, ``FOR UPDATE SKIP LOCKED`` hands each due row to exactly one of them, and a row
is marked delivered in the transaction that sends it, so a crash or restart between the
two cannot send it twice; a message still due after a restart is sent then.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from hubbub.actions.scheduled_message_delivery import deliver_one_due_scheduled_message
from hubbub.actions.scheduled_messages import add_delivery_waker, remove_delivery_waker
from hubbub.models import Realm
from hubbub.queries.scheduled_messages import next_due_timestamp
from hubbub.services import Services
from hubbub.settings import Settings

logger = logging.getLogger("hubbub.workers")

MAX_SLEEP_SECONDS = 1.0
# A row another worker has claimed still reads as due until that worker commits; a short
# pause keeps the loop from spinning on it meanwhile.
MIN_SLEEP_SECONDS = 0.05


def delivery_realm_url(settings: Settings, realm: Realm) -> str:
    """The realm's URL for rendering a message sent with no request to take it from: the
    configured external host (served over HTTPS), else the address the server listens on."""
    if settings.external_host:
        sub = realm.string_id
        return f"https://{sub + '.' if sub else ''}{settings.external_host}"
    return f"http://{settings.host}:{settings.port}"


async def deliver_due_scheduled_messages(services: Services) -> int:
    """Send every message due by ``services.clock`` now; how many were handled (sent or
    marked failed)."""
    # A read first: when nothing is due (nearly always) no write transaction is opened,
    # which on SQLite would take the single writer's lock every second.
    async with services.db.read() as conn:
        due = await next_due_timestamp(conn)
    if due is None or due > services.clock.now():
        return 0
    handled = 0
    while True:
        async with services.write() as tx:
            found = await deliver_one_due_scheduled_message(
                tx,
                now=services.clock.now(),
                realm_url=lambda realm: delivery_realm_url(services.settings, realm),
            )
        if found is None:
            return handled
        handled += 1


async def _seconds_until_next_due(services: Services) -> float:
    async with services.db.read() as conn:
        due = await next_due_timestamp(conn)
    if due is None:
        return MAX_SLEEP_SECONDS
    return min(MAX_SLEEP_SECONDS, max(MIN_SLEEP_SECONDS, due - services.clock.now()))


async def run_scheduled_delivery(services: Services) -> None:
    """Deliver due messages until cancelled; a failing pass is logged and retried."""
    wake = asyncio.Event()
    wake_at = float("inf")

    def waker(due: float) -> None:
        # Only a message due before the planned wake-up needs the loop early; during a
        # pass (``wake_at`` infinite) any change may have been missed by its queries.
        if due < wake_at:
            wake.set()

    add_delivery_waker(waker)
    try:
        while True:
            wake.clear()
            wake_at = float("inf")
            delay = MAX_SLEEP_SECONDS
            try:
                await deliver_due_scheduled_messages(services)
                delay = await _seconds_until_next_due(services)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("scheduled message delivery failed")
            wake_at = services.clock.now() + delay
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=delay)
    finally:
        remove_delivery_waker(waker)
