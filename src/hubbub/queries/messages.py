"""Reading single messages: per-user flags and who may read a message."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from hubbub.db.dialects import over_user_message
from hubbub.db.tables import message, recipient, stream, subscription, user_message
from hubbub.errors import JsonableError
from hubbub.models import Stream, User
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.stream_permissions import has_content_access_via_groups

# Zulip's user_message flag bits, in bit order (the order flag names are listed in).
FLAG_BITS: tuple[tuple[str, int], ...] = (
    ("read", 1),
    ("starred", 2),
    ("collapsed", 4),
    ("mentioned", 8),
    ("stream_wildcard_mentioned", 16),
    ("topic_wildcard_mentioned", 32),
    ("has_alert_word", 512),
    ("historical", 1024),
)
READ = 1
STARRED = 2
MENTIONED = 8
STREAM_WILDCARD_MENTIONED = 16
TOPIC_WILDCARD_MENTIONED = 32
GROUP_MENTIONED = 64
HAS_ALERT_WORD = 512
HISTORICAL = 1024
IS_PRIVATE = 2048
# Any kind of mention: what /register ``unread_msgs.mentions`` counts.
ANY_MENTION = MENTIONED | STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED | GROUP_MENTIONED


def flag_names(flags: int) -> list[str]:
    """The API names of a flags value. ``is_private`` and ``group_mentioned`` are internal
    (Zulip 8.0 does not list them among the flags clients see; a group mention also sets
    ``mentioned``)."""
    # A page of 100 messages has a handful of distinct values: each is spelled once.
    return list(_flag_names(flags))


@functools.lru_cache(maxsize=512)
def _flag_names(flags: int) -> tuple[str, ...]:
    names = [name for name, bit in FLAG_BITS if flags & bit]
    # Zulip 8.0 still sends the pre-feature-level-224 "wildcard_mentioned" alongside.
    if flags & (STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED):
        names.append("wildcard_mentioned")
    return tuple(names)


@dataclass(frozen=True)
class MessageAccess:
    """A message the user may read, with the user's flags (None: no row, so historical)."""

    id: int
    flags: int | None

    @property
    def flag_names(self) -> list[str]:
        if self.flags is None:
            return ["read", "historical"]
        return flag_names(self.flags)


async def access_message(conn: AsyncConnection, user: User, message_id: int) -> MessageAccess:
    """The message if ``user`` may read it; "Invalid message(s)" otherwise (the same for a
    message that does not exist, so ids do not leak).

    Readable: the user has a row for it, or it is in a stream whose history the user can
    see (``can_access_stream_history``)."""
    row = (
        await conn.execute(
            sa.select(message.c.id, message.c.realm_id, recipient.c.type, recipient.c.type_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id == message_id)
        )
    ).first()
    if row is None or row.realm_id != user.realm_id:
        raise JsonableError("Invalid message(s)")
    flags = (
        await conn.execute(
            sa.select(user_message.c.flags).where(
                user_message.c.user_profile_id == user.id,
                user_message.c.message_id == message_id,
            )
        )
    ).scalar()
    if flags is not None:
        return MessageAccess(row.id, int(flags))
    if row.type == RECIPIENT_STREAM and await _can_read_stream_history(conn, user, row.type_id):
        return MessageAccess(row.id, None)
    raise JsonableError("Invalid message(s)")


async def _can_read_stream_history(conn: AsyncConnection, user: User, stream_id: int) -> bool:
    target = (await conn.execute(sa.select(stream).where(stream.c.id == stream_id))).first()
    if target is None:
        return False
    return await can_access_stream_history(conn, user, Stream.from_row(target))


async def can_access_stream_history(conn: AsyncConnection, user: User, target: Stream) -> bool:
    """Whether every message of the stream is readable to ``user``, rows or not: a
    web-public stream (to anyone of the realm, guests too, as in Zulip), a public stream for
    non-guests, or a stream with shared history the user is subscribed to or reads through
    a group granting content access (feature level 354)."""
    if target.is_web_public or (not target.invite_only and not user.is_guest):
        return True
    if not target.history_public_to_subscribers:
        return False
    subscribed = (
        await conn.execute(
            sa.select(subscription.c.id).where(
                subscription.c.user_profile_id == user.id,
                subscription.c.stream_id == target.id,
                subscription.c.active,
            )
        )
    ).first()
    if subscribed is not None:
        return True
    return await has_content_access_via_groups(conn, user, target)


async def get_raw_content(conn: AsyncConnection, message_id: int) -> str:
    return str(
        (
            await conn.execute(sa.select(message.c.content).where(message.c.id == message_id))
        ).scalar_one()
    )


def with_flags(item: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {**item, "flags": names}


async def max_message_id_for_user(conn: AsyncConnection, user_id: int) -> int:
    """The newest message the user has a row for, or -1 (the deprecated ``max_message_id``
    that old clients base their local ids on)."""
    statement = sa.select(sa.func.max(user_message.c.message_id)).where(
        user_message.c.user_profile_id == user_id
    )
    # A row per table of the user's rows on SQLite (``over_user_message``).
    found = [
        newest
        for (newest,) in await conn.execute(over_user_message(conn, statement))
        if newest is not None
    ]
    return int(max(found)) if found else -1


def flag_set(flags: ColumnElement[int], bits: int) -> ColumnElement[bool]:
    """Whether any of ``bits`` is set in ``flags`` (the bits as a bound parameter)."""
    return flags.op("&")(bits) != 0


def flag_is(bit: int, present: bool, table: sa.Table = user_message) -> ColumnElement[bool]:
    """``(user_message.flags & bit) != 0`` (or ``= 0``), with the bit as a literal: the
    form of the partial indexes' predicates, which a bound parameter would not match.
    (``table``: one of the tables that hold the rows, for a write: ``user_message_tables``.)"""
    masked = table.c.flags.op("&")(sa.literal_column(str(bit)))
    zero: ColumnElement[int] = sa.literal_column("0")
    return masked != zero if present else masked == zero
