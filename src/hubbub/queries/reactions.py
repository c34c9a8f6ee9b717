"""Reading emoji reactions and submessages (widget data) of messages.

Message objects list both in the order they were added: reactions by row id, submessages
by message and then row id (as Zulip 8.0). Each loader reads a whole batch of messages
in one query, so ``GET /messages`` pays two queries however many messages it returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows, named
from hubbub.db.tables import reaction, stream, submessage, subscription, user_message, user_profile

# Built once per dialect: every page of messages reads both.
_REACTIONS = PerDialect(
    lambda dialect: (
        sa.select(
            reaction.c.message_id,
            reaction.c.emoji_name,
            reaction.c.emoji_code,
            reaction.c.reaction_type,
            reaction.c.user_profile_id,
            user_profile.c.email,
            user_profile.c.full_name,
        )
        .join(user_profile, user_profile.c.id == reaction.c.user_profile_id)
        .where(dialect.in_ids(reaction.c.message_id, "ids"))
        .order_by(reaction.c.id)
    )
)
_SUBMESSAGES = PerDialect(
    lambda dialect: (
        sa.select(submessage)
        .where(dialect.in_ids(submessage.c.message_id, "ids"))
        .order_by(submessage.c.message_id, submessage.c.id)
    )
)


async def _by_message(
    conn: AsyncConnection,
    statement: PerDialect[sa.Select[Any]],
    message_ids: Collection[int],
    make: Callable[[Mapping[Any, Any]], dict[str, Any]],
) -> dict[int, list[dict[str, Any]]]:
    """Message id -> ``make`` of each of its rows (only messages that have any)."""
    result: dict[int, list[dict[str, Any]]] = defaultdict(list)
    if not message_ids:
        return result
    params = {"ids": ids_argument(conn, message_ids)}
    for found in await fetch_rows(conn, statement(conn), params):
        row = named(found)
        result[row["message_id"]].append(make(row))
    return result


def _reaction_dict(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {
        "emoji_name": row["emoji_name"],
        "emoji_code": row["emoji_code"],
        "reaction_type": row["reaction_type"],
        "user_id": row["user_profile_id"],
        "user": {
            "id": row["user_profile_id"],
            "email": row["email"],
            "full_name": row["full_name"],
        },
    }


def _submessage_dict(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "message_id": row["message_id"],
        "sender_id": row["sender_id"],
        "msg_type": row["msg_type"],
        "content": row["content"],
    }


async def get_reaction_dicts(
    conn: AsyncConnection, message_ids: Collection[int]
) -> dict[int, list[dict[str, Any]]]:
    """Message id -> its reactions as message objects show them (only messages that have
    any). The ``user`` object is deprecated since feature level 2 but still sent by Zulip
    8.0, without ``is_mirror_dummy``."""
    return await _by_message(conn, _REACTIONS, message_ids, _reaction_dict)


async def get_submessage_dicts(
    conn: AsyncConnection, message_ids: Collection[int]
) -> dict[int, list[dict[str, Any]]]:
    """Message id -> its submessages, oldest first (only messages that have any)."""
    return await _by_message(conn, _SUBMESSAGES, message_ids, _submessage_dict)


async def has_reaction(
    conn: AsyncConnection,
    message_id: int,
    emoji_code: str,
    reaction_type: str,
    *,
    user_id: int | None = None,
) -> bool:
    """Whether the message has this reaction (from ``user_id``, when given)."""
    query = sa.select(reaction.c.id).where(
        reaction.c.message_id == message_id,
        reaction.c.emoji_code == emoji_code,
        reaction.c.reaction_type == reaction_type,
    )
    if user_id is not None:
        query = query.where(reaction.c.user_profile_id == user_id)
    return (await conn.execute(query.limit(1))).first() is not None


async def get_reaction_name(
    conn: AsyncConnection, message_id: int, emoji_code: str, reaction_type: str
) -> str | None:
    """The name the earliest reaction with this emoji on the message was added under."""
    return (
        await conn.execute(
            sa.select(reaction.c.emoji_name)
            .where(
                reaction.c.message_id == message_id,
                reaction.c.emoji_code == emoji_code,
                reaction.c.reaction_type == reaction_type,
            )
            .order_by(reaction.c.id)
            .limit(1)
        )
    ).scalar()


async def get_user_message_holder_ids(conn: AsyncConnection, message_id: int) -> set[int]:
    """Users with a ``user_message`` row for the message (recipients and historical)."""
    rows = await conn.execute(
        sa.select(user_message.c.user_profile_id).where(user_message.c.message_id == message_id)
    )
    return {uid for (uid,) in rows}


async def get_history_subscriber_ids(conn: AsyncConnection, stream_id: int) -> set[int]:
    """Active subscribers (active users) who can read the stream's whole history: all of
    them when the history is public to subscribers, none otherwise."""
    public = (
        await conn.execute(
            sa.select(stream.c.history_public_to_subscribers).where(stream.c.id == stream_id)
        )
    ).scalar()
    if not public:
        return set()
    rows = await conn.execute(
        sa.select(subscription.c.user_profile_id)
        .join(user_profile, user_profile.c.id == subscription.c.user_profile_id)
        .where(
            subscription.c.stream_id == stream_id, subscription.c.active, user_profile.c.is_active
        )
    )
    return {uid for (uid,) in rows}


async def has_submessage_from(conn: AsyncConnection, message_id: int, sender_id: int) -> bool:
    return (
        await conn.execute(
            sa.select(submessage.c.id)
            .where(submessage.c.message_id == message_id, submessage.c.sender_id == sender_id)
            .limit(1)
        )
    ).first() is not None


async def get_widget_type(conn: AsyncConnection, message_id: int) -> str | None:
    """The ``widget_type`` of the message's first ``widget`` submessage ("poll", "todo",
    ...), or None when there is none or its content does not say."""
    content = (
        await conn.execute(
            sa.select(submessage.c.content)
            .where(submessage.c.message_id == message_id, submessage.c.msg_type == "widget")
            .order_by(submessage.c.id)
            .limit(1)
        )
    ).scalar()
    if content is None:
        return None
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    widget_type = data.get("widget_type") if isinstance(data, dict) else None
    return widget_type if isinstance(widget_type, str) else None
