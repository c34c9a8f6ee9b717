"""Administering streams: archiving them, and the realm's set of default streams.

Archiving follows Zulip 10.2: subscriptions stay (an archived stream is still listed for
clients that can show archived streams), and no ``subscription`` events are sent.
Default-stream changes are in ``default_streams.py``.
"""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.default_streams import do_add_default_streams, do_remove_default_stream
from hubbub.db.tables import stream as stream_table
from hubbub.errors import JsonableError
from hubbub.events.queues import CAPABILITY_FORM_MARK
from hubbub.models import Realm, Stream, User
from hubbub.queries.streams import (
    access_stream_by_id,
    get_default_stream_ids,
    get_subscriber_ids,
    metadata_viewer_ids,
    stream_delete_event,
)
from hubbub.queries.users import list_active_users
from hubbub.transaction import Tx


async def check_add_default_stream(tx: Tx, acting: User, realm: Realm, stream_id: int) -> None:
    """An administrator's ``POST /default_streams``. As in Zulip, a private stream the
    administrator is not subscribed to is an "Invalid stream ID"; one they are subscribed to
    still cannot become a default stream."""
    target, _ = await access_stream_by_id(tx.conn, acting, stream_id, allow_admin=False)
    if target.invite_only:
        raise JsonableError("Private streams cannot be made default.")
    await do_add_default_streams(tx, realm, [target])


async def do_deactivate_stream(tx: Tx, realm: Realm, target: Stream) -> None:
    """Archive ``target`` (Zulip 10.2): it keeps its subscriptions, leaves the default
    streams and is marked archived (its name becomes free for a new stream). Everyone who
    could see it is told: clients with the ``archived_channels`` capability (feature level
    315) by a ``stream``/``update`` of ``is_archived``, the others by ``stream``/``delete``."""
    if target.deactivated:
        raise JsonableError("Channel is already deactivated")
    users = await list_active_users(tx.conn, realm.id)
    subscribers = await get_subscriber_ids(tx.conn, [target.id])
    viewers = metadata_viewer_ids(target, users, subscribers[target.id])
    was_default = target.id in await get_default_stream_ids(tx.conn, realm.id)
    await tx.conn.execute(
        sa.update(stream_table).where(stream_table.c.id == target.id).values(deactivated=True)
    )
    if was_default:
        await do_remove_default_stream(tx, realm, target)
    if viewers:
        update = {
            "type": "stream",
            "op": "update",
            "stream_id": target.id,
            "name": target.name,
            "property": "is_archived",
            "value": True,
        }
        # Each queue gets one form, by its archived_channels capability.
        capable = {**update, CAPABILITY_FORM_MARK: ["archived_channels", True]}
        legacy = {
            **stream_delete_event([target.id]),
            CAPABILITY_FORM_MARK: ["archived_channels", False],
        }
        tx.notify(realm.id, capable, viewers)
        tx.notify(realm.id, legacy, viewers)
