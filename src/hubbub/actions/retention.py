"""Message retention: deleting messages older than their conversation's retention period.

The period is Zulip 8.0's ``message_retention_days``: a stream's own value when it has one
(-1: keep forever), otherwise the realm's (-1, the default: keep forever). Direct messages
always follow the realm's value. A message expires once it is *strictly* older than the
period (``date_sent < now - days``), as in Zulip.

The background job (``workers/retention.py``) plans the work here, then deletes each
conversation's expired messages in batches, one transaction per batch, through
``do_delete_messages`` (per-user rows, reactions, submessages and attachment links go with
the rows; ``delete_message`` events tell clients). Zulip moves such messages to an archive
and sends no events; hubbub has no archive, and the events keep open clients consistent.

Finding expired messages stays cheap on a large database without an index on
``date_sent``: message ids grow with ``date_sent`` (both are assigned when a message is
sent), so the newest expired id is found by a binary search over the primary key, and each
conversation's expired messages are then an index range on ``(recipient_id, id)`` below it.
The ``date_sent`` test stays in the query, so a message out of order is never deleted early;
at worst one is deleted a run late.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.delete_message import do_delete_messages
from hubbub.db.tables import direct_message_group, message, recipient, stream, user_profile
from hubbub.db.tables import realm as realm_table
from hubbub.models import Realm
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_PERSONAL,
    RECIPIENT_STREAM,
)
from hubbub.transaction import Tx

# Messages per transaction, as Zulip's retention (MESSAGE_BATCH_SIZE): large enough to make
# progress on a first run over years of history, small enough not to hold the (SQLite:
# only) writer for long.
RETENTION_BATCH_SIZE = 1000
SECONDS_PER_DAY = 86400
# The stored value for "keep forever" (realm and stream).
UNLIMITED_RETENTION = -1


@dataclass(frozen=True)
class RetentionGroup:
    """Conversations of one realm that share a retention period."""

    realm_id: int
    days: int
    recipient_ids: tuple[int, ...]

    def cutoff(self, now: float) -> float:
        """Messages sent before this time have expired."""
        return now - self.days * SECONDS_PER_DAY


async def get_retention_plan(conn: AsyncConnection) -> list[RetentionGroup]:
    """Every conversation with a limited retention period, grouped by realm and period.
    Conversations that never had a message have no recipient row and are left out."""
    realm_days: dict[int, int] = {}
    for row in await conn.execute(sa.select(realm_table)):
        realm_days[int(row.id)] = int(Realm.from_row(row).setting("message_retention_days"))

    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    stream_rows = await conn.execute(
        sa.select(stream.c.realm_id, stream.c.message_retention_days, recipient.c.id).join(
            recipient,
            sa.and_(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream.c.id),
        )
    )
    for realm_id, own_days, recipient_id in stream_rows:
        # A stream without a value of its own follows the realm; archived streams too.
        days = realm_days[int(realm_id)] if own_days is None else int(own_days)
        if days != UNLIMITED_RETENTION:
            groups[(int(realm_id), days)].append(int(recipient_id))

    limited = [rid for rid, days in realm_days.items() if days != UNLIMITED_RETENTION]
    if limited:
        for realm_id, recipient_id in await conn.execute(_direct_recipients(limited)):
            groups[(int(realm_id), realm_days[int(realm_id)])].append(int(recipient_id))

    return [
        RetentionGroup(realm_id, days, tuple(sorted(ids)))
        for (realm_id, days), ids in sorted(groups.items())
    ]


def _direct_recipients(realm_ids: list[int]) -> sa.CompoundSelect[int, int]:
    """The direct-message conversations of the realms: one per user (messages to that
    user, or to oneself) and one per group of three or more."""
    personal = sa.select(user_profile.c.realm_id, recipient.c.id).join(
        recipient,
        sa.and_(recipient.c.type == RECIPIENT_PERSONAL, recipient.c.type_id == user_profile.c.id),
    )
    groups = sa.select(direct_message_group.c.realm_id, recipient.c.id).join(
        recipient,
        sa.and_(
            recipient.c.type == RECIPIENT_DIRECT_MESSAGE_GROUP,
            recipient.c.type_id == direct_message_group.c.id,
        ),
    )
    return sa.union_all(
        personal.where(user_profile.c.realm_id.in_(realm_ids)),
        groups.where(direct_message_group.c.realm_id.in_(realm_ids)),
    )


async def get_expiry_boundary(conn: AsyncConnection, cutoff: float) -> int:
    """An id bound for the messages sent before ``cutoff``, assuming ids grow with
    ``date_sent``: those messages have ids at most the bound, the ones above it were sent
    later (0: none has expired). A binary search over the primary key, a few dozen index
    look-ups however many messages there are."""
    lowest, highest = (
        await conn.execute(sa.select(sa.func.min(message.c.id), sa.func.max(message.c.id)))
    ).one()
    if lowest is None:
        return 0
    lo, hi = int(lowest), int(highest)
    first_kept: int | None = None
    while lo <= hi:
        mid = (lo + hi) // 2
        # The first message at or after ``mid`` (ids have gaps where messages were deleted).
        found_id, date_sent = (
            await conn.execute(
                sa.select(message.c.id, message.c.date_sent)
                .where(message.c.id >= mid)
                .order_by(message.c.id)
                .limit(1)
            )
        ).one()
        if float(date_sent) < cutoff:
            lo = int(found_id) + 1
        else:
            first_kept = int(found_id)
            hi = mid - 1
    return int(highest) if first_kept is None else first_kept - 1


async def do_delete_expired_batch(
    tx: Tx,
    realm_id: int,
    recipient_id: int,
    *,
    cutoff: float,
    boundary: int,
    limit: int = RETENTION_BATCH_SIZE,
) -> list[int]:
    """Delete up to ``limit`` of the conversation's messages sent before ``cutoff`` (oldest
    first, ids at most ``boundary``); the ids deleted."""
    query = (
        sa.select(message.c.id)
        .where(
            message.c.recipient_id == recipient_id,
            message.c.id <= boundary,
            message.c.date_sent < cutoff,
        )
        .order_by(message.c.id)
        .limit(limit)
        # Several PostgreSQL workers may run the job at once: each deletes (and announces)
        # only the rows it locked. SQLite has a single writer and ignores this.
        .with_for_update(skip_locked=True)
    )
    ids = [int(mid) for (mid,) in await tx.conn.execute(query)]
    return await do_delete_messages(tx, realm_id, ids)
