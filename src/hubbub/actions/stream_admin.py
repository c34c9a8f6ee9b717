"""Administering streams: archiving them, and the realm's set of default streams.

Events follow Zulip 8.0. Archiving sends no ``subscription`` events: the subscriptions are
simply closed, and everyone who could see the stream gets ``stream``/``delete`` (clients
drop it from every list), preceded by ``default_streams`` when it was a default stream.
Default-stream changes are in ``default_streams.py``.
"""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.actions.default_streams import do_add_default_streams, do_remove_default_stream
from hubbub.db.tables import stream as stream_table
from hubbub.db.tables import subscription
from hubbub.errors import JsonableError
from hubbub.models import Realm, Stream, User
from hubbub.queries.streams import (
    access_stream_by_id,
    get_default_stream_ids,
    get_subscriber_ids,
    metadata_viewer_ids,
    stream_dict,
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
    """Archive ``target``: close every subscription (deactivated users' too), drop it from the
    default streams, mark it deactivated (its name becomes free for a new stream) and tell
    everyone who could see it."""
    users = await list_active_users(tx.conn, realm.id)
    subscribers = await get_subscriber_ids(tx.conn, [target.id])
    # Who could see it is decided before anything changes.
    viewers = metadata_viewer_ids(target, users, subscribers[target.id])
    was_default = target.id in await get_default_stream_ids(tx.conn, realm.id)
    await tx.conn.execute(
        sa.update(subscription)
        .where(subscription.c.stream_id == target.id, subscription.c.active)
        .values(active=False)
    )
    await tx.conn.execute(
        sa.update(stream_table).where(stream_table.c.id == target.id).values(deactivated=True)
    )
    if was_default:
        await do_remove_default_stream(tx, realm, target)
    if viewers:
        tx.notify(
            realm.id, {"type": "stream", "op": "delete", "streams": [stream_dict(target)]}, viewers
        )
