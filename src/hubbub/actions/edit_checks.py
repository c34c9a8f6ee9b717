"""What ``PATCH /messages/{message_id}`` checks before it changes anything.

- Content: only the sender edits it, only while the realm allows editing, and only within
  ``message_content_edit_limit_seconds`` (None: no limit) plus Zulip's 20 s of grace.
- Topic: members of ``can_move_messages_between_topics_group`` (feature level 316; since
  level 159 independent of ``allow_message_editing`` and of who sent the message; since
  level 172 messages without a topic are no exception), within
  ``move_messages_within_stream_limit_seconds`` unless an administrator or moderator.
  Resolving or unresolving a topic (the "✔ " prefix) needs ``can_resolve_topics_group``
  instead (level 367).
- Stream: ``can_move_messages_between_channels_group`` (level 310), a target stream the
  user can see and post to, and ``move_messages_between_streams_limit_seconds`` for others
  than administrators and moderators.
- ``change_all`` by others than administrators and moderators must not move any message
  older than the applicable limit (feature level 172): the special
  ``MOVE_MESSAGES_TIME_LIMIT_EXCEEDED`` error says how much of the topic they may move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.send_message import check_stream_post_permission, normalize_topic
from hubbub.db.tables import message, recipient, stream, submessage, user_message
from hubbub.errors import JsonableError, MoveMessagesTimeLimitError
from hubbub.models import Realm, Stream, User
from hubbub.permissions import user_has_permission
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.messages import can_access_stream_history
from hubbub.queries.streams import access_stream_by_id
from hubbub.topic_names import is_resolve_or_unresolve

# Zulip allows an edit this long past a limit: its web app offers editing up to 15 s past
# it, and a request needs time to arrive.
EDIT_LIMIT_BUFFER_SECONDS = 20
PROPAGATE_MODES = ("change_one", "change_later", "change_all")


@dataclass(frozen=True)
class EditRequest:
    """The request's parameters as the endpoint received them."""

    content: str | None = None
    topic: str | None = None
    stream_id: int | None = None
    propagate_mode: str = "change_one"
    # Validated and accepted; hubbub has no Notification Bot to post them yet.
    send_notification_to_old_thread: bool = False
    send_notification_to_new_thread: bool = True


@dataclass(frozen=True)
class TargetMessage:
    """The edited message's row, read (and on PostgreSQL locked) in the edit transaction."""

    id: int
    realm_id: int
    sender_id: int
    recipient_id: int
    # None for a direct message.
    stream_id: int | None
    topic: str
    content: str
    rendered_content: str | None
    rendered_content_version: int | None
    date_sent: float
    edit_history: list[dict[str, Any]]


async def load_target_message(conn: AsyncConnection, message_id: int) -> TargetMessage:
    row = (
        await conn.execute(
            sa.select(message, recipient.c.type.label("rtype"), recipient.c.type_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id == message_id)
            # Concurrent edits of one message take turns (SQLite has one writer anyway).
            .with_for_update(of=message)
        )
    ).one()
    return TargetMessage(
        id=row.id,
        realm_id=row.realm_id,
        sender_id=row.sender_id,
        recipient_id=row.recipient_id,
        stream_id=row.type_id if row.rtype == RECIPIENT_STREAM else None,
        topic=row.topic,
        content=row.content,
        rendered_content=row.rendered_content,
        rendered_content_version=row.rendered_content_version,
        date_sent=row.date_sent,
        edit_history=orjson.loads(row.edit_history) if row.edit_history else [],
    )


def _past(msg: TargetMessage, limit: int | None, now: float) -> bool:
    return limit is not None and now - msg.date_sent > limit + EDIT_LIMIT_BUFFER_SECONDS


def _moves_freely(user: User) -> bool:
    """Administrators and moderators are exempt from the moving time limits."""
    return user.is_realm_admin or user.is_moderator


def check_content_edit_permission(realm: Realm, user: User, msg: TargetMessage, now: float) -> None:
    if not realm.setting("allow_message_editing"):
        raise JsonableError("Your organization has turned off message editing")
    if msg.sender_id != user.id:
        raise JsonableError("You don't have permission to edit this message")
    # Zulip 8.0 says "has passed"; its OpenAPI document still lists the older "has past".
    if _past(msg, realm.setting("message_content_edit_limit_seconds"), now):
        raise JsonableError("The time limit for editing this message has passed")


async def check_edit_payload(
    conn: AsyncConnection,
    realm: Realm,
    msg: TargetMessage,
    *,
    content: str | None,
    topic: str | None,
    stream_id: int | None,
    propagate_mode: str,
) -> str | None:
    """Zulip's well-formedness checks, in its order; the normalized new topic."""
    if topic is None and content is None and stream_id is None:
        raise JsonableError("Nothing to change")
    if msg.stream_id is None:
        if stream_id is not None:
            raise JsonableError("Direct messages cannot be moved to streams.")
        if topic is not None:
            raise JsonableError("Direct messages cannot have topics.")
    if propagate_mode != "change_one" and topic is None and stream_id is None:
        raise JsonableError("Invalid propagate_mode without topic edit")
    if topic is not None:
        # The same normalization as sending, except that an edit to "(no topic)" keeps
        # those words (Zulip 10.2 reads them as the empty topic only when sending).
        topic = normalize_topic(realm, topic, no_topic_is_empty=False)
    if stream_id is not None and content is not None:
        raise JsonableError("Cannot change message content while changing stream")
    if content is not None and await _is_widget(conn, msg.id):
        raise JsonableError("Widgets cannot be edited.")
    return topic


async def _is_widget(conn: AsyncConnection, message_id: int) -> bool:
    # Every widget message (poll, todo list) has submessages, and only those do.
    found = await conn.execute(
        sa.select(submessage.c.id).where(submessage.c.message_id == message_id).limit(1)
    )
    return found.first() is not None


async def check_topic_edit_permission(
    conn: AsyncConnection, realm: Realm, user: User, msg: TargetMessage, topic: str, now: float
) -> None:
    # Since feature level 367 resolving and unresolving need can_resolve_topics_group,
    # other topic changes can_move_messages_between_topics_group (level 316).
    if is_resolve_or_unresolve(msg.topic, topic):
        if not await user_has_permission(conn, user, realm, "can_resolve_topics_group"):
            raise JsonableError("You don't have permission to resolve topics.")
    elif not await user_has_permission(conn, user, realm, "can_move_messages_between_topics_group"):
        raise JsonableError("You don't have permission to edit this message")
    limit = realm.setting("move_messages_within_stream_limit_seconds")
    if not _moves_freely(user) and _past(msg, limit, now):
        raise JsonableError("The time limit for editing this message's topic has passed.")


async def access_stream_for_move(
    conn: AsyncConnection, realm: Realm, user: User, msg: TargetMessage, stream_id: int, now: float
) -> Stream:
    if not await user_has_permission(conn, user, realm, "can_move_messages_between_channels_group"):
        raise JsonableError("You don't have permission to move this message")
    # An administrator needs a subscription to move into a private stream, as in Zulip.
    target, _sub = await access_stream_by_id(conn, user, stream_id, allow_admin=False)
    await check_stream_post_permission(conn, user, target)
    limit = realm.setting("move_messages_between_streams_limit_seconds")
    if not _moves_freely(user) and _past(msg, limit, now):
        raise JsonableError("The time limit for editing this message's stream has passed")
    return target


async def check_change_all_time_limit(
    conn: AsyncConnection,
    realm: Realm,
    user: User,
    msg: TargetMessage,
    *,
    topic_changed: bool,
    stream_changed: bool,
    now: float,
) -> None:
    """``change_all`` must not reach past the stricter applicable moving limit."""
    if _moves_freely(user):
        return
    deadlines = []
    within = realm.setting("move_messages_within_stream_limit_seconds")
    between = realm.setting("move_messages_between_streams_limit_seconds")
    if topic_changed and within is not None:
        deadlines.append(int(within) + EDIT_LIMIT_BUFFER_SECONDS)
    if stream_changed and between is not None:
        deadlines.append(int(between) + EDIT_LIMIT_BUFFER_SECONDS)
    if not deadlines or msg.stream_id is None:
        return
    oldest_allowed = now - min(deadlines)
    query = (
        sa.select(message.c.id, message.c.date_sent)
        .where(
            message.c.recipient_id == msg.recipient_id,
            sa.func.lower(message.c.topic) == msg.topic.lower(),
        )
        .order_by(message.c.id)
    )
    source = (await conn.execute(sa.select(stream).where(stream.c.id == msg.stream_id))).one()
    if not await can_access_stream_history(conn, user, Stream.from_row(source)):
        # Only the part of the topic the user can read counts (ids must not leak).
        query = query.join(
            user_message,
            sa.and_(
                user_message.c.message_id == message.c.id,
                user_message.c.user_profile_id == user.id,
            ),
        )
    rows = list(await conn.execute(query))
    allowed = [r.id for r in rows if r.date_sent > oldest_allowed]
    if len(allowed) < len(rows):
        raise MoveMessagesTimeLimitError(allowed[0] if allowed else None, len(rows), len(allowed))
