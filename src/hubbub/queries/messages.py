"""Reading single messages: per-user flags and who may read a message."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from hubbub.db.dialects import PerDialect
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import (
    message,
    reaction,
    realm_linkifier,
    recipient,
    stream,
    submessage,
    subscription,
    user_message,
)
from hubbub.errors import JsonableError
from hubbub.models import Stream, User
from hubbub.queries.message_dicts import (
    RECIPIENT_STREAM,
    DisplayRecipient,
    MessageRow,
    ReadAlong,
    message_dicts_of_rows,
)
from hubbub.queries.people import PeopleCache, people_version_of
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


def _with_access(*columns: Any) -> sa.Select[Any]:
    """``columns`` of the message ``message_id`` in the realm ``realm_id``, followed by
    what deciding whether the user ``user_id`` may read it takes (``_ACCESS_COLUMNS``):
    its recipient, the user's flags, and for a stream message the stream's history
    settings and whether the user is subscribed."""
    flags = (
        sa.select(user_message.c.flags)
        .where(
            user_message.c.user_profile_id == sa.bindparam("user_id"),
            user_message.c.message_id == message.c.id,
        )
        .scalar_subquery()
    )
    subscribed = sa.exists().where(
        subscription.c.user_profile_id == sa.bindparam("user_id"),
        subscription.c.stream_id == stream.c.id,
        subscription.c.active,
    )
    return (
        sa.select(
            *columns,
            recipient.c.type.label("recipient_type"),
            recipient.c.type_id.label("recipient_type_id"),
            flags.label("viewer_flags"),
            stream.c.name.label("stream_name"),
            stream.c.is_web_public,
            stream.c.invite_only,
            stream.c.history_public_to_subscribers,
            subscribed.label("subscribed"),
        )
        .select_from(message)
        .join(recipient, recipient.c.id == message.c.recipient_id)
        .outerjoin(
            stream,
            sa.and_(recipient.c.type == RECIPIENT_STREAM, stream.c.id == recipient.c.type_id),
        )
        .where(
            message.c.id == sa.bindparam("message_id"),
            message.c.realm_id == sa.bindparam("realm_id"),
        )
    )


# Built once: every reaction, edit, typing notice and fetch of a message asks.
_ACCESS = _with_access(message.c.id)
_ACCESS_COLUMNS = len(_ACCESS.selected_columns) - 1
# For GET /messages/{message_id}: the whole message row, then what else showing it reads
# (``message_dicts.ReadAlong``), then the access columns.
_MESSAGE_WITH_ACCESS = _with_access(
    *message.c,
    sa.exists().where(reaction.c.message_id == message.c.id).label("has_reactions"),
    sa.exists().where(submessage.c.message_id == message.c.id).label("has_submessages"),
    sa.exists().where(realm_linkifier.c.realm_id == message.c.realm_id).label("has_linkifiers"),
    people_version_of(message.c.realm_id).label("people_version"),
)


async def access_message(conn: AsyncConnection, user: User, message_id: int) -> MessageAccess:
    """The message if ``user`` may read it; "Invalid message(s)" otherwise (the same for a
    message that does not exist, so ids do not leak).

    Readable: the user has a row for it, or it is in a stream whose history the user can
    see (``can_access_stream_history``)."""
    rows = await fetch_rows(conn, _ACCESS, access_parameters(user, message_id))
    if not rows:
        raise JsonableError("Invalid message(s)")
    return await check_message_access(conn, user, message_id, rows[0][1:])


def access_parameters(user: User, message_id: int) -> dict[str, int]:
    """The parameters of ``_with_access``'s statements."""
    return {"message_id": message_id, "realm_id": user.realm_id, "user_id": user.id}


async def check_message_access(
    conn: AsyncConnection, user: User, message_id: int, columns: Sequence[Any]
) -> MessageAccess:
    """The message's access for ``user`` from the ``_ACCESS_COLUMNS`` of its row, or
    "Invalid message(s)"."""
    (
        recipient_type,
        stream_id,
        flags,
        stream_name,
        web_public,
        invite_only,
        history_public,
        subscribed,
    ) = columns
    if flags is not None:
        return MessageAccess(message_id, int(flags))
    if recipient_type == RECIPIENT_STREAM and stream_name is not None:
        if web_public or (not invite_only and not user.is_guest):
            return MessageAccess(message_id, None)
        if history_public and (subscribed or await _can_read_stream_history(conn, user, stream_id)):
            return MessageAccess(message_id, None)
    raise JsonableError("Invalid message(s)")


@dataclass(frozen=True)
class ReadableMessage:
    """A message the viewer may read, as ``GET /messages/{message_id}`` shows it."""

    access: MessageAccess
    # Its message object, without ``flags``.
    item: dict[str, Any]
    raw_content: str


async def get_readable_message(
    conn: AsyncConnection,
    viewer: User,
    message_id: int,
    *,
    apply_markdown: bool,
    realm_str: str,
    people: PeopleCache,
) -> ReadableMessage:
    """The message if ``viewer`` may read it (as ``access_message``), its row and the
    check read in one statement, with what else showing it needs (a stream message's
    recipient, whether it has reactions or submessages, the realm's linkifiers and
    people version), so that a message without reactions shown to a realm without
    linkifiers takes no other statement."""
    rows = await fetch_rows(conn, _MESSAGE_WITH_ACCESS, access_parameters(viewer, message_id))
    if not rows:
        raise JsonableError("Invalid message(s)")
    row = rows[0]
    count = len(message.c)
    access_columns = row[-_ACCESS_COLUMNS:]
    access = await check_message_access(conn, viewer, message_id, access_columns)
    found: Any = MessageRow(*row[:count])
    has_reactions, has_submessages, has_linkifiers, people_version = row[count:-_ACCESS_COLUMNS]
    recipient_type, type_id, _flags, stream_name = access_columns[:4]
    recipients: dict[int, DisplayRecipient] | None = None
    if recipient_type == RECIPIENT_STREAM and stream_name is not None:
        recipients = {found.recipient_id: (recipient_type, type_id, stream_name)}
    along = ReadAlong(
        recipients=recipients,
        people_version=int(people_version),
        has_linkifiers=bool(has_linkifiers),
        without_reactions=frozenset(() if has_reactions else (message_id,)),
        without_submessages=frozenset(() if has_submessages else (message_id,)),
    )
    items = await message_dicts_of_rows(
        conn,
        viewer,
        [found],
        apply_markdown=apply_markdown,
        client_gravatar=False,
        people=people,
        realm_str=realm_str,
        along=along,
    )
    return ReadableMessage(access, items[found.id], found.content)


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


def with_flags(item: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {**item, "flags": names}


# Built once per dialect: every GET /users/me asks.
_NEWEST_RECEIVED = PerDialect(
    lambda dialect: dialect.over_tables(
        sa.select(sa.func.max(user_message.c.message_id)).where(
            user_message.c.user_profile_id == sa.bindparam("user_id")
        )
    )
)


async def max_message_id_for_user(conn: AsyncConnection, user_id: int) -> int:
    """The newest message the user has a row for, or -1 (the deprecated ``max_message_id``
    that old clients base their local ids on)."""
    # A row per table of the user's rows on SQLite (``over_tables``).
    rows = await fetch_rows(conn, _NEWEST_RECEIVED(conn), {"user_id": user_id})
    found = [newest for (newest,) in rows if newest is not None]
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
