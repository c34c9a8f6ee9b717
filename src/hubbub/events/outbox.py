"""The event outbox: how a command's events reach a running server's event queues.

A command (``hubbub create-user``, ``rotate-api-key``, ...) is a process of its own. With
the in-memory bus the server's queues are in the server's memory, so the command's events
used to reach nobody: a user created that way was unknown to every open client until it
registered again. Instead the command's write transaction stores its events here, beside
the change they describe (both commit, or neither), and the server's background loop
(``workers/event_outbox.py``) claims them, deletes them and publishes them on its bus
once the deletion has committed, as every action publishes after its commit. So each
stored event is published once, by one worker: on PostgreSQL the claim's ``FOR UPDATE
SKIP LOCKED`` keeps two workers off the same rows; SQLite has one writer at a time, so
its write transaction is the claim. With Redis the command could publish itself, but
one way for every database and bus keeps the commands simple.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import event_outbox
from hubbub.events.bus import Notice

# Rows one claim takes; the loop claims again at once while it keeps finding this many.
CLAIM_BATCH = 500

_ANY_ROW = sa.select(event_outbox.c.id).limit(1)


async def store_outbox(
    conn: AsyncConnection, notices: Iterable[Notice], stale_credentials: Iterable[int], now: float
) -> None:
    """Keep a transaction's events (and users whose credentials it changed) for the
    server to publish; called in that transaction, so they commit with its changes."""
    rows = [
        {
            "realm_id": notice.realm_id,
            "event": orjson.dumps(notice.event).decode(),
            "user_ids": orjson.dumps(list(notice.user_ids)).decode(),
            "public_stream_except": (
                None
                if notice.public_stream_except is None
                else orjson.dumps(sorted(notice.public_stream_except)).decode()
            ),
            "created": now,
        }
        for notice in notices
    ]
    stale = sorted(stale_credentials)
    if stale:
        rows.append(
            {
                "realm_id": None,
                "event": None,
                "user_ids": orjson.dumps(stale).decode(),
                "public_stream_except": None,
                "created": now,
            }
        )
    if rows:
        await conn.execute(sa.insert(event_outbox), rows)


async def has_outbox_rows(conn: AsyncConnection) -> bool:
    """Whether anything waits: a read, so that an idle server (nearly always) never opens
    a write transaction for the outbox (on SQLite the single writer's lock)."""
    return (await conn.execute(_ANY_ROW)).first() is not None


@dataclass
class Claimed:
    """What one claim took out of the outbox, in the order it was stored."""

    rows: int = 0
    notices: list[Notice] = field(default_factory=list)
    stale_credentials: set[int] = field(default_factory=set)


async def claim_outbox(conn: AsyncConnection, limit: int = CLAIM_BATCH) -> Claimed:
    """Take (delete) the oldest stored rows, up to ``limit``, in ``conn``'s write
    transaction: once it commits they are this caller's alone to publish."""
    rows = (
        await conn.execute(
            sa.select(event_outbox)
            .order_by(event_outbox.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
    ).all()
    claimed = Claimed(rows=len(rows))
    if not rows:
        return claimed
    await conn.execute(sa.delete(event_outbox).where(event_outbox.c.id.in_([r.id for r in rows])))
    for row in rows:
        user_ids = orjson.loads(row.user_ids)
        if row.event is None:
            claimed.stale_credentials.update(user_ids)
            continue
        skipped = row.public_stream_except
        claimed.notices.append(
            Notice(
                row.realm_id,
                orjson.loads(row.event),
                tuple(user_ids),
                None if skipped is None else frozenset(orjson.loads(skipped)),
            )
        )
    return claimed
