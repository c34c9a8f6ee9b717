"""Per-topic visibility policies of a user (muted, unmuted, followed)."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import stream, user_topic
from hubbub.errors import JsonableError
from hubbub.models import Stream, User
from hubbub.queries.streams import access_stream_by_id, get_stream_by_name


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


_USER_TOPIC = sa.select(user_topic).where(
    user_topic.c.user_profile_id == sa.bindparam("user_id"),
    user_topic.c.stream_id == sa.bindparam("stream_id"),
    sa.func.lower(user_topic.c.topic_name)
    == sa.func.lower(sa.bindparam("topic_name", type_=sa.String)),
)


async def get_user_topic(
    conn: AsyncConnection, user_id: int, stream_id: int, topic_name: str
) -> Any | None:
    """The user's row for this topic, matched case-insensitively (as the unique index
    ``lower(topic_name)`` matches), or None. Built once: every stream send reads it."""
    params = {"user_id": user_id, "stream_id": stream_id, "topic_name": topic_name}
    return (await conn.execute(_USER_TOPIC, params)).first()


async def access_stream_for_topic_policy(
    conn: AsyncConnection, user: User, *, stream_id: int | None = None, name: str | None = None
) -> Stream:
    """The stream whose topic ``user`` may mute, unmute or follow: one the user can read
    (subscribed, a public stream for non-guests, or web-public), as Zulip's
    ``access_stream_by_id``/``access_stream_by_name`` without the administrator exemption.
    Zulip 8.0's errors: "Invalid stream ID" / "Invalid stream name '<name>'"."""
    if name is not None:
        found = await get_stream_by_name(conn, user.realm_id, name)
        error = f"Invalid stream name '{name}'"
        if found is None:
            raise JsonableError(error)
        try:
            found, _ = await access_stream_by_id(conn, user, found.id, allow_admin=False)
        except JsonableError:
            raise JsonableError(error) from None
        return found
    assert stream_id is not None
    found, _ = await access_stream_by_id(conn, user, stream_id, allow_admin=False)
    return found


async def access_stream_to_remove_policy(
    conn: AsyncConnection,
    user: User,
    error: str,
    *,
    stream_id: int | None = None,
    name: str | None = None,
) -> Stream:
    """The stream for removing a policy: any stream of the user's realm, archived or not,
    even one the user can no longer read (Zulip lets a former subscriber of a private
    stream clear the policies they set there). ``error`` when there is none."""
    where = (
        sa.func.lower(stream.c.name) == name.lower()
        if name is not None
        else stream.c.id == stream_id
    )
    row = (
        await conn.execute(
            sa.select(stream)
            .where(stream.c.realm_id == user.realm_id, where)
            .order_by(stream.c.deactivated, stream.c.id)
        )
    ).first()
    if row is None:
        raise JsonableError(error)
    return Stream.from_row(row)
