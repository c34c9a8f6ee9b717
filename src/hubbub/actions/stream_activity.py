"""Whether a stream is recently active (feature level 323), and its events.

A stream is recently active when it was created, or had a message, within the last
``RECENT_ACTIVITY_DAYS`` days (Zulip's LAST_ACTIVITY_DAYS_BEFORE_FOR_ACTIVE). The flag is
stored: a message to an inactive stream sets it at once, and ``do_mark_inactive_streams``
clears it for streams that have gone quiet; each change is a ``stream``/``update`` event
for ``is_recently_active`` to everyone who can see the stream, as Zulip 10.2 sends.
"""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.db.tables import message, recipient
from hubbub.db.tables import stream as stream_table
from hubbub.models import Realm, Stream
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.streams import get_subscriber_ids, list_streams, metadata_viewer_ids
from hubbub.queries.users import list_active_users
from hubbub.transaction import Tx

RECENT_ACTIVITY_DAYS = 180
SECONDS_PER_DAY = 86400


async def _set_recently_active(tx: Tx, target: Stream, value: bool) -> None:
    await tx.conn.execute(
        sa.update(stream_table)
        .where(stream_table.c.id == target.id)
        .values(is_recently_active=value)
    )
    users = await list_active_users(tx.conn, target.realm_id)
    subscribers = (await get_subscriber_ids(tx.conn, [target.id]))[target.id]
    viewers = metadata_viewer_ids(target, users, subscribers)
    if viewers:
        tx.notify(
            target.realm_id,
            {
                "type": "stream",
                "op": "update",
                "stream_id": target.id,
                "name": target.name,
                "property": "is_recently_active",
                "value": value,
            },
            viewers,
        )


async def note_stream_activity(tx: Tx, target: Stream) -> None:
    """A message is being sent to ``target``: it is recently active again."""
    if not target.is_recently_active:
        await _set_recently_active(tx, target, True)


async def do_mark_inactive_streams(tx: Tx, realm: Realm, now: float) -> list[int]:
    """Clear the flag of the realm's streams created before the window with no message in
    it; returns their ids."""
    since = now - RECENT_ACTIVITY_DAYS * SECONDS_PER_DAY
    recent = (
        sa.select(recipient.c.type_id)
        .join(message, message.c.recipient_id == recipient.c.id)
        .where(
            message.c.realm_id == realm.id,
            recipient.c.type == RECIPIENT_STREAM,
            message.c.date_sent >= since,
        )
    )
    active_ids = {stream_id for (stream_id,) in await tx.conn.execute(recent.distinct())}
    marked = []
    for target in await list_streams(tx.conn, realm.id):
        if not target.is_recently_active or target.date_created >= since:
            continue
        if target.id not in active_ids:
            await _set_recently_active(tx, target, False)
            marked.append(target.id)
    return marked
