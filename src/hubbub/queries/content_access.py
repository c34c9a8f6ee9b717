"""Which private streams a user reads through groups granting content access (Zulip
10.2's ``can_add_subscribers_group`` and ``can_subscribe_group``, feature level 354), for
writes that give such a user rows for a stream's history."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import message, recipient, stream, subscription
from hubbub.models import Stream, User
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.stream_permissions import group_readable_stream_ids


async def group_readable_streams_of(
    conn: AsyncConnection, user: User, message_ids: list[int]
) -> list[int]:
    """The private streams with shared history, among those of ``message_ids``, that the
    user reads through a group granting content access without being subscribed."""
    if user.is_guest or not message_ids:
        return []
    subscribed = sa.exists().where(
        subscription.c.stream_id == stream.c.id,
        subscription.c.user_profile_id == user.id,
        subscription.c.active,
    )
    rows = await conn.execute(
        sa.select(stream)
        .where(
            stream.c.id.in_(
                sa.select(recipient.c.type_id)
                .join(message, message.c.recipient_id == recipient.c.id)
                .where(message.c.id.in_(message_ids), recipient.c.type == RECIPIENT_STREAM)
            ),
            stream.c.realm_id == user.realm_id,
            stream.c.invite_only,
            stream.c.history_public_to_subscribers,
            ~subscribed,
        )
        .order_by(stream.c.id)
    )
    candidates = [Stream.from_row(row) for row in rows]
    return sorted(await group_readable_stream_ids(conn, user, candidates))
