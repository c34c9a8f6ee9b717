"""Marking whole conversations read: everything (``POST /mark_all_as_read``), a stream or a
topic (the deprecated ``/mark_stream_as_read`` and ``/mark_topic_as_read``), and every
message from a user one mutes.

Each is one UPDATE over the user's unread rows (found through the partial unread index on
PostgreSQL, in the user's range of the keyed table on SQLite, migration 0016), so 50,000
unread messages cost one statement, not 50,000. Zulip marks everything read in
batches of 2,000 and may answer ``complete: false`` after a timeout (feature level 211);
one statement always completes.
"""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.message_flags import notify_flags_changed
from hubbub.db.dialects import user_message_tables
from hubbub.db.tables import message
from hubbub.models import User
from hubbub.queries.message_flags import stream_recipient, unread
from hubbub.queries.messages import READ
from hubbub.transaction import Tx


def _mark_read(table: sa.Table) -> dict[str, sa.ColumnElement[int]]:
    return {"flags": table.c.flags.op("|")(sa.literal_column(str(READ)))}


async def do_mark_all_as_read(tx: Tx, user: User) -> int:
    """Mark every unread message read; the number changed. The event lists no ids
    (``all: true``): clients drop all their unread state, as Zulip's do."""
    changed = 0
    for table in user_message_tables(tx.conn):
        result = await tx.conn.execute(
            sa.update(table)
            .where(table.c.user_profile_id == user.id, unread(table))
            .values(_mark_read(table))
        )
        changed += int(result.rowcount)
    await notify_flags_changed(tx, user, "read", adding=True, message_ids=[], everything=True)
    return changed


async def do_mark_stream_messages_as_read(
    tx: Tx, user: User, stream_id: int, topic: str | None = None
) -> int:
    """Mark the unread messages of a stream (or of one of its topics, case-insensitively)
    read; the number changed. No event when nothing changed, as in Zulip."""
    in_stream = sa.select(message.c.id).where(message.c.recipient_id == stream_recipient(stream_id))
    if topic:
        in_stream = in_stream.where(sa.func.lower(message.c.topic) == topic.lower())
    return await _mark_read_among(tx, user, in_stream)


async def do_mark_sender_messages_as_read(tx: Tx, user: User, sender_id: int) -> int:
    """Mark every unread message ``user`` has from ``sender_id`` read, in streams and in
    direct messages alike (Zulip's do_mark_muted_user_messages_as_read, run when muting);
    the number changed. No event when nothing changed, as in Zulip."""
    from_sender = sa.select(message.c.id).where(message.c.sender_id == sender_id)
    return await _mark_read_among(tx, user, from_sender)


async def _mark_read_among(tx: Tx, user: User, message_ids: sa.Select[tuple[int]]) -> int:
    """Mark the user's unread rows of the messages ``message_ids`` selects read, in one
    UPDATE per table, and send the event listing them (ascending)."""
    found: list[int] = []
    for table in user_message_tables(tx.conn):
        result = await tx.conn.execute(
            sa.update(table)
            .where(
                table.c.user_profile_id == user.id,
                unread(table),
                table.c.message_id.in_(message_ids),
            )
            .values(_mark_read(table))
            .returning(table.c.message_id)
        )
        found.extend(result.scalars())
    changed = sorted(found)
    if changed:
        await notify_flags_changed(tx, user, "read", adding=True, message_ids=changed)
    return len(changed)
