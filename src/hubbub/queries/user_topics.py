"""Per-topic visibility policies of a user (muted, unmuted, followed)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import stream, user_topic


class VisibilityPolicy(IntEnum):
    """Zulip's values (feature level 170; FOLLOWED since 219)."""

    INHERIT = 0
    MUTED = 1
    UNMUTED = 2
    FOLLOWED = 3


def user_topic_dict(
    stream_id: int, topic_name: str, last_updated: float, policy: int
) -> dict[str, Any]:
    return {
        "stream_id": stream_id,
        "topic_name": topic_name,
        "last_updated": int(last_updated),
        "visibility_policy": policy,
    }


async def list_user_topics(conn: AsyncConnection, user_id: int) -> list[dict[str, Any]]:
    """The user's policies on topics of streams that are not archived."""
    rows = await conn.execute(
        sa.select(user_topic)
        .join(stream, stream.c.id == user_topic.c.stream_id)
        .where(user_topic.c.user_profile_id == user_id, ~stream.c.deactivated)
        .order_by(user_topic.c.id)
    )
    return [
        user_topic_dict(r.stream_id, r.topic_name, r.last_updated, r.visibility_policy)
        for r in rows
    ]


async def muted_topics_legacy(conn: AsyncConnection, user_id: int) -> list[list[Any]]:
    """``muted_topics`` as clients before feature level 134 read it:
    ``[stream_name, topic, last_updated]`` for each muted topic."""
    rows = await conn.execute(
        sa.select(stream.c.name, user_topic.c.topic_name, user_topic.c.last_updated)
        .join(stream, stream.c.id == user_topic.c.stream_id)
        .where(
            user_topic.c.user_profile_id == user_id,
            user_topic.c.visibility_policy == VisibilityPolicy.MUTED,
            ~stream.c.deactivated,
        )
        .order_by(user_topic.c.id)
    )
    return [[name, topic, int(updated)] for name, topic, updated in rows]
