"""The realm's default streams (new users join them): adding, removing, and the
``default_streams`` event.

As in Zulip, guests neither see the list (their ``realm_default_streams`` is empty) nor get
its events; everyone else gets the whole list on every change: the streams' ids, in id
order, since feature level 330 (whole stream objects before).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from hubbub.db.tables import default_stream
from hubbub.models import Realm, Stream
from hubbub.queries.streams import get_default_stream_ids
from hubbub.queries.users import list_active_users
from hubbub.transaction import Tx


async def notify_default_streams(tx: Tx, realm_id: int) -> None:
    default_ids = await get_default_stream_ids(tx.conn, realm_id)
    recipients = [u.id for u in await list_active_users(tx.conn, realm_id) if not u.is_guest]
    tx.notify(realm_id, {"type": "default_streams", "default_streams": default_ids}, recipients)


async def do_add_default_streams(tx: Tx, realm: Realm, streams: Sequence[Stream]) -> None:
    """Make ``streams`` default streams; one event, and none when nothing changes (adding a
    stream that already is one is not an error, as in Zulip)."""
    current = set(await get_default_stream_ids(tx.conn, realm.id))
    new_ids = sorted({s.id for s in streams} - current)
    if not new_ids:
        return
    await tx.conn.execute(
        sa.insert(default_stream), [{"realm_id": realm.id, "stream_id": i} for i in new_ids]
    )
    await notify_default_streams(tx, realm.id)


async def do_remove_default_stream(
    tx: Tx, realm: Realm, target: Stream, *, always_notify: bool = True
) -> None:
    """Zulip 8.0 neither refuses a stream that is not a default stream nor skips the event
    for ``DELETE /default_streams``; ``always_notify=False`` sends it only on a change."""
    result = await tx.conn.execute(
        sa.delete(default_stream).where(
            default_stream.c.realm_id == realm.id, default_stream.c.stream_id == target.id
        )
    )
    if always_notify or result.rowcount:
        await notify_default_streams(tx, realm.id)
