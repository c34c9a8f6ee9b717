"""A user's scheduled messages as the Zulip API shows them, and the scheduler's reads.

Behaviour follows Zulip 8.0 (feature levels 173-184):
- ``GET /scheduled_messages`` and the ``scheduled_messages`` /register state list the
  user's undelivered messages, failed ones included, by delivery time (then id, so that
  ties have one order everywhere);
- a stream message's ``to`` is the stream id and it has a ``topic``; a direct message's
  ``to`` is the list of the other participants' ids (the sender alone for a note to self)
  and it has no ``topic``; ``type`` is still the legacy "private";
- another user's scheduled message, or one that never existed, is "Scheduled message does
  not exist" (a 404 with the BAD_REQUEST code); a delivered one can still be deleted.
"""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import scheduled_message
from hubbub.errors import ApiError
from hubbub.models import User


class ScheduledMessageDoesNotExistError(ApiError):
    """Zulip's ``ResourceNotFoundError``: a 404 with the BAD_REQUEST code."""

    http_status = 404

    def __init__(self) -> None:
        super().__init__("Scheduled message does not exist")


def scheduled_message_dict(row: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"scheduled_message_id": row.id}
    if row.message_type == "stream":
        item.update(type="stream", to=row.stream_id, topic=row.topic)
    else:
        item.update(type="private", to=orjson.loads(row.to_user_ids))
    item.update(
        content=row.content,
        rendered_content=row.rendered_content,
        scheduled_delivery_timestamp=int(row.scheduled_timestamp),
        failed=bool(row.failed),
    )
    return item


def scheduled_order_key(item: dict[str, Any]) -> tuple[int, int]:
    """The order of the list: /register and applying events to it both sort with this."""
    return (item["scheduled_delivery_timestamp"], item["scheduled_message_id"])


async def list_undelivered_scheduled_messages(
    conn: AsyncConnection, user_id: int
) -> list[dict[str, Any]]:
    rows = await conn.execute(
        sa.select(scheduled_message)
        .where(scheduled_message.c.sender_id == user_id, sa.not_(scheduled_message.c.delivered))
        .order_by(scheduled_message.c.scheduled_timestamp, scheduled_message.c.id)
    )
    return sorted((scheduled_message_dict(r) for r in rows), key=scheduled_order_key)


async def access_scheduled_message(
    conn: AsyncConnection, user: User, scheduled_message_id: int, *, lock: bool = False
) -> Any:
    """The user's own scheduled message row, or Zulip's 404. ``lock`` holds the row for the
    transaction (PostgreSQL), so an edit waits for a delivery that is under way."""
    query = sa.select(scheduled_message).where(
        scheduled_message.c.id == scheduled_message_id,
        scheduled_message.c.sender_id == user.id,
    )
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).first()
    if row is None:
        raise ScheduledMessageDoesNotExistError()
    return row


def _pending() -> sa.ColumnElement[bool]:
    return sa.and_(sa.not_(scheduled_message.c.delivered), sa.not_(scheduled_message.c.failed))


async def claim_due_scheduled_message(conn: AsyncConnection, now: float) -> Any:
    """The oldest due, pending row, locked for the caller's transaction; None when none.

    On PostgreSQL ``FOR UPDATE SKIP LOCKED`` lets several workers claim different rows at
    once and never the same one; the row stays locked until the transaction that marks it
    delivered (or failed) commits, after which it no longer matches. SQLite has one writer
    at a time and renders no locking clause: the write transaction itself is the claim.
    """
    query = (
        sa.select(scheduled_message)
        .where(_pending(), scheduled_message.c.scheduled_timestamp <= now)
        .order_by(scheduled_message.c.scheduled_timestamp, scheduled_message.c.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    return (await conn.execute(query)).first()


async def next_due_timestamp(conn: AsyncConnection) -> float | None:
    """When the next pending message is due (None when nothing is scheduled)."""
    value = (
        await conn.execute(
            sa.select(sa.func.min(scheduled_message.c.scheduled_timestamp)).where(_pending())
        )
    ).scalar()
    return None if value is None else float(value)
