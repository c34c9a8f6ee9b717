"""Typing notifications (``POST /typing``): stateless ``typing`` events, as in Zulip 8.0.

Direct-message notifications go to every active participant, the typist included; stream
notifications (feature level 215 form: ``stream_id`` + ``topic``) go to the stream's
active subscribers, and not at all for streams of more than 100 subscribers (Zulip's
limit, to spare large streams the traffic).
"""

from __future__ import annotations

from typing import Literal

import sqlalchemy as sa

from hubbub.actions.send_message import access_stream_for_send
from hubbub.db.tables import user_profile
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.queries.streams import access_stream_by_id
from hubbub.queries.user_settings import get_user_settings
from hubbub.transaction import Tx

MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS = 100

Op = Literal["start", "stop"]


def _person(user_id: int, email: str) -> dict[str, int | str]:
    return {"user_id": user_id, "email": email}


async def check_send_direct_typing(tx: Tx, sender: User, to: list[int], op: Op) -> None:
    if not to:
        raise JsonableError("Empty 'to' list")
    settings = await get_user_settings(tx.conn, sender.id)
    if not settings.get("send_private_typing_notifications", True):
        raise JsonableError("User has disabled typing notifications for direct messages")
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
    tx.notify(sender.realm_id, event, [uid for uid in ids if rows[uid].is_active])


async def check_send_stream_typing(
    tx: Tx, sender: User, stream_id: int | None, topic: str | None, op: Op
) -> None:
    if stream_id is None:
        raise JsonableError("Missing stream_id")
    if topic is None:
        raise JsonableError("Missing topic")
    settings = await get_user_settings(tx.conn, sender.id)
    if not settings.get("send_stream_typing_notifications", True):
        raise JsonableError("User has disabled typing notifications for stream messages")
    target, _sub = await access_stream_by_id(tx.conn, sender, stream_id)
    # Typing is only announced where the user could send the message.
    subscribers = (await access_stream_for_send(tx, sender, target.id)).subscribers
    if len(subscribers) > MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS:
        return
    event = {
        "type": "typing",
        "op": op,
        "message_type": "stream",
        "sender": _person(sender.id, sender.email),
        "stream_id": target.id,
        "topic": topic,
    }
    tx.notify(sender.realm_id, event, subscribers)
