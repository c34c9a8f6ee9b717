"""Typing notifications: stateless events, as in Zulip 10.2.

``POST /typing`` sends ``typing`` events. Direct-message notifications go to every active
participant, the typist included; stream notifications (feature level 215 form:
``stream_id`` + ``topic``) go to the stream's active subscribers, and not at all for
streams of more than 100 subscribers (Zulip's limit, to spare large streams the traffic;
every active subscriber counts towards it).

``POST /messages/{message_id}/typing`` (feature level 351, path since level 361) sends
``typing_edit_message`` events while someone edits a message they may edit: to the
conversation's active participants, or to its stream's active subscribers under the same
limit of 100.

Users who turned ``receives_typing_notifications`` off (feature level 253) get none.
"""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa

from hubbub.actions.send_message import access_stream_for_send
from hubbub.db.tables import message, recipient, user_profile
from hubbub.errors import JsonableError
from hubbub.models import Realm, User
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_STREAM,
    get_direct_message_group_members,
)
from hubbub.queries.messages import access_message
from hubbub.queries.streams import access_stream_by_id, get_subscriber_ids
from hubbub.queries.user_settings import get_typing_opt_out_ids, get_user_settings
from hubbub.topic_names import LEGACY_NO_TOPIC, check_topic_characters, interpret_topic_name
from hubbub.transaction import Tx

MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS = 100

Op = Literal["start", "stop"]

# Zulip 10.2's wording (it says "channel" where 8.0 said "stream").
STREAM_TYPING_DISABLED = "User has disabled typing notifications for channel messages"
DIRECT_TYPING_DISABLED = "User has disabled typing notifications for direct messages"


def _person(user_id: int, email: str) -> dict[str, int | str]:
    return {"user_id": user_id, "email": email}


async def check_send_direct_typing(tx: Tx, sender: User, to: list[int], op: Op) -> None:
    if not to:
        raise JsonableError("Empty 'to' list")
    settings = await get_user_settings(tx.conn, sender.id)
    if not settings.get("send_private_typing_notifications", True):
        raise JsonableError(DIRECT_TYPING_DISABLED)
    ids = list(dict.fromkeys([*to, sender.id]))
    rows = {
        r.id: r
        for r in await tx.conn.execute(
            sa.select(user_profile.c.id, user_profile.c.email, user_profile.c.is_active).where(
                user_profile.c.id.in_(ids), user_profile.c.realm_id == sender.realm_id
            )
        )
    }
    for user_id in ids:
        if user_id not in rows:
            # One bad id rejects the whole request: a partial group would be confusing.
            raise JsonableError(f"Invalid user ID {user_id}")
    event = {
        "type": "typing",
        "op": op,
        "message_type": "direct",
        "sender": _person(sender.id, sender.email),
        "recipients": [_person(rows[uid].id, rows[uid].email) for uid in ids],
    }
    active = [uid for uid in ids if rows[uid].is_active]
    opted_out = await get_typing_opt_out_ids(tx.conn, active)
    tx.notify(sender.realm_id, event, [uid for uid in active if uid not in opted_out])


async def check_send_stream_typing(
    tx: Tx, sender: User, stream_id: int | None, topic: str | None, op: Op
) -> None:
    if stream_id is None:
        raise JsonableError("Missing 'stream_id' argument")
    if topic is None:
        raise JsonableError("Missing topic")
    settings = await get_user_settings(tx.conn, sender.id)
    if not settings.get("send_stream_typing_notifications", True):
        raise JsonableError(STREAM_TYPING_DISABLED)
    target, _sub = await access_stream_by_id(tx.conn, sender, stream_id)
    # Typing is only announced where the user could send the message.
    subscribers = (await access_stream_for_send(tx, sender, target.id)).subscribers
    if len(subscribers) > MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS:
        return
    # Surrounding whitespace does not count, as when sending; the empty topic's display
    # name (feature level 334) and the older "(no topic)" (feature level 372) both mean
    # the empty topic.
    topic = interpret_topic_name(topic.strip())
    topic = "" if topic == LEGACY_NO_TOPIC else topic
    # Shown to the other subscribers' clients as it is: an escape sequence would reach
    # their screens.
    check_topic_characters(topic)
    event = {
        "type": "typing",
        "op": op,
        "message_type": "stream",
        "sender": _person(sender.id, sender.email),
        "stream_id": target.id,
        "topic": topic,
    }
    opted_out = await get_typing_opt_out_ids(tx.conn, subscribers)
    tx.notify(sender.realm_id, event, [uid for uid in subscribers if uid not in opted_out])


def check_can_edit_content_now(
    realm: Realm, user: User, sender_id: int, date_sent: float, now: float
) -> None:
    """Whether ``user`` may edit the message's content at ``now``: the checks of
    ``PATCH /messages/{message_id}``, except that Zulip grants no grace period past the
    edit limit here (a client offers editing only within the limit)."""
    if not realm.setting("allow_message_editing"):
        raise JsonableError("Your organization has turned off message editing")
    if sender_id != user.id:
        raise JsonableError("You don't have permission to edit this message")
    limit = realm.setting("message_content_edit_limit_seconds")
    if limit is not None and now - date_sent > limit:
        raise JsonableError("The time limit for editing this message has passed")


async def check_send_message_edit_typing(
    tx: Tx, realm: Realm, sender: User, message_id: int, op: Op, *, now: float
) -> None:
    """Announce that ``sender`` is (``start``) or no longer is (``stop``) editing the
    message, to the people its edit would reach."""
    await access_message(tx.conn, sender, message_id)
    row = (
        await tx.conn.execute(
            sa.select(
                message.c.sender_id,
                message.c.date_sent,
                message.c.topic,
                recipient.c.type,
                recipient.c.type_id,
            )
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id == message_id)
        )
    ).one()
    check_can_edit_content_now(realm, sender, row.sender_id, row.date_sent, now)
    settings = await get_user_settings(tx.conn, sender.id)
    event: dict[str, Any] = {
        "type": "typing_edit_message",
        "op": op,
        "sender_id": sender.id,
        "message_id": message_id,
    }
    if row.type == RECIPIENT_STREAM:
        if not settings.get("send_stream_typing_notifications", True):
            raise JsonableError(STREAM_TYPING_DISABLED)
        subscribers = (await get_subscriber_ids(tx.conn, [row.type_id]))[row.type_id]
        if len(subscribers) > MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS:
            return
        opted_out = await get_typing_opt_out_ids(tx.conn, subscribers)
        event["recipient"] = {"type": "channel", "channel_id": row.type_id, "topic": row.topic}
        tx.notify(sender.realm_id, event, [uid for uid in subscribers if uid not in opted_out])
        return
    if not settings.get("send_private_typing_notifications", True):
        raise JsonableError(DIRECT_TYPING_DISABLED)
    if row.type == RECIPIENT_DIRECT_MESSAGE_GROUP:
        members = await get_direct_message_group_members(tx.conn, {row.type_id})
        participants = sorted(members[row.type_id])
    else:
        # A one-to-one message's recipient is the other person (the sender, who is the
        # editor, for a message to oneself).
        participants = list(dict.fromkeys([sender.id, row.type_id]))
    active = set(
        await tx.conn.scalars(
            sa.select(user_profile.c.id).where(
                user_profile.c.id.in_(participants), user_profile.c.is_active
            )
        )
    )
    opted_out = await get_typing_opt_out_ids(tx.conn, active)
    notified = [uid for uid in participants if uid in active and uid not in opted_out]
    # Zulip names only the notified participants here, not the whole conversation.
    event["recipient"] = {"type": "direct", "user_ids": notified}
    tx.notify(sender.realm_id, event, notified)
