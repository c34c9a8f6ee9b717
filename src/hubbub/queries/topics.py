"""A stream's topics as a user sees them (``GET /users/me/{stream_id}/topics``)."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import over_user_message
from hubbub.db.tables import message, user_message
from hubbub.models import Stream, User
from hubbub.queries.message_flags import stream_recipient


async def get_topic_history(
    conn: AsyncConnection, user: User, target: Stream
) -> list[dict[str, Any]]:
    """Each topic with its newest message id, newest topic first.

    Where the stream's history is shared, every message counts; otherwise only messages the
    user received. Topics differing only in case are one topic, named with the spelling of
    its newest message (as Zulip 8.0)."""
    newest = sa.func.max(message.c.id)
    query = sa.select(message.c.topic, newest.label("max_id")).where(
        message.c.realm_id == user.realm_id,
        message.c.recipient_id == stream_recipient(target.id),
    )
    if not target.history_public_to_subscribers:
        query = query.join(
            user_message,
            sa.and_(
                user_message.c.message_id == message.c.id,
                user_message.c.user_profile_id == user.id,
            ),
        )
    newest_by_topic: dict[str, int] = {}
    # A row per topic and table of the user's rows on SQLite (``over_user_message``).
    by_topic = over_user_message(conn, query.group_by(message.c.topic))
    for name, max_id in await conn.execute(by_topic):
        newest_by_topic[name] = max(int(max_id), newest_by_topic.get(name, 0))
    rows = sorted(newest_by_topic.items(), key=lambda item: -item[1])
    seen: set[str] = set()
    topics = []
    for name, max_id in rows:
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        topics.append({"name": name, "max_id": int(max_id)})
    return topics
