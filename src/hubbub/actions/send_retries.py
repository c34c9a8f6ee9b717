"""Retried sends: one message per (sender, ``queue_id``, ``local_id``).

The official clients re-send a request after a 5xx or a dropped connection (the Python
client up to ten times), and a send whose response was lost has still happened. A client
that names its event queue and a local id for the message (as Zulip's web and mobile apps
do, for their local echo) gets the first message's id back for every repeat instead of a
duplicate. Zulip itself does not deduplicate; hubbub does because losing a response must
not post a message twice.

The key is written in the send's own transaction, under a unique index, so two copies
racing each other cannot both commit: the loser's transaction fails as a whole and its
caller answers with the winner's id. Keys are kept for a day (``prune_send_keys``), longer
than any client retries.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import send_key

SEND_KEY_TTL_SECONDS = 24 * 3600
# Longer ids (no client sends them) are not remembered: the key must fit an index.
MAX_KEY_PART_LENGTH = 64


def _keyed(queue_id: str | None, local_id: str | None) -> bool:
    return bool(
        queue_id
        and local_id
        and len(queue_id) <= MAX_KEY_PART_LENGTH
        and len(local_id) <= MAX_KEY_PART_LENGTH
    )


async def get_resent_message_id(
    conn: AsyncConnection, sender_id: int, queue_id: str | None, local_id: str | None
) -> int | None:
    """The id of the message this request already sent, if it is a repeat. (A deleted
    message takes its key with it: the foreign key cascades.)"""
    if not _keyed(queue_id, local_id):
        return None
    query = sa.select(send_key.c.message_id).where(
        send_key.c.sender_id == sender_id,
        send_key.c.queue_id == queue_id,
        send_key.c.local_id == local_id,
    )
    found = (await conn.execute(query)).scalar_one_or_none()
    return int(found) if found is not None else None


async def do_record_send_key(
    conn: AsyncConnection,
    sender_id: int,
    queue_id: str | None,
    local_id: str | None,
    message_id: int,
    now: float,
) -> None:
    """Remember the send; raises IntegrityError if a concurrent copy recorded it first."""
    if not _keyed(queue_id, local_id):
        return
    await conn.execute(
        sa.insert(send_key).values(
            sender_id=sender_id,
            queue_id=queue_id,
            local_id=local_id,
            message_id=message_id,
            date_sent=now,
        )
    )


async def prune_send_keys(conn: AsyncConnection, now: float) -> int:
    result = await conn.execute(
        sa.delete(send_key).where(send_key.c.date_sent < now - SEND_KEY_TTL_SECONDS)
    )
    return int(result.rowcount or 0)
