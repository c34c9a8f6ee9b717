"""Topics followed or unmuted automatically when a message is sent (Zulip 8.0).

- The sender, when subscribed and not a bot: ``automatically_follow_topics_policy``
  (feature level 214) follows the topic on every message (1 "participation", 2 "send")
  or when the message starts the topic (3 "initiation", the default); otherwise, in a
  muted stream, ``automatically_unmute_topics_in_muted_streams_policy`` unmutes it by
  the same rule (default 2). The sender's new policy is returned for the response's
  ``automatic_new_visibility_policy`` (feature level 218).
- Users mentioned by name (not by wildcard or group) who receive the message follow the
  topic when ``automatically_follow_topics_where_mentioned`` is on (feature level 235).

- Reacting to a stream message or adding a submessage to it is "participation" too
  (policy value 1): the topic is followed, or unmuted in a muted stream; a followed topic
  is never lowered.

Each change goes through the ordinary user-topic action, so clients get the usual
``muted_topics`` and ``user_topic`` events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa

from hubbub.actions.user_topics import do_set_user_topic_visibility_policy
from hubbub.db.tables import message
from hubbub.models import Stream, User
from hubbub.queries.streams import get_stream_by_id, get_subscription
from hubbub.queries.user_settings import get_json_user_settings
from hubbub.queries.user_topics import VisibilityPolicy, get_user_topic
from hubbub.queries.users import get_user_by_id
from hubbub.transaction import Tx

_PARTICIPATION, _SEND, _INITIATION = 1, 2, 3

# Whether the topic had a message before this one; built once (every stream send asks).
_EARLIER_IN_TOPIC = (
    sa.select(message.c.id)
    .where(
        message.c.recipient_id == sa.bindparam("recipient_id"),
        sa.func.lower(message.c.topic) == sa.bindparam("topic"),
        message.c.id != sa.bindparam("message_id"),
    )
    .limit(1)
)


def _applies(policy: int, initiation: bool) -> bool:
    return policy in (_PARTICIPATION, _SEND) or (policy == _INITIATION and initiation)


async def _current(tx: Tx, user_id: int, target: Stream, topic: str) -> int:
    row = await get_user_topic(tx.conn, user_id, target.id, topic)
    return int(row.visibility_policy) if row is not None else VisibilityPolicy.INHERIT


async def apply_automatic_policies(
    tx: Tx,
    sender: User,
    target: Stream,
    topic: str,
    message_id: int,
    recipient_id: int,
    mentioned_ids: Iterable[int],
    recipient_user_ids: set[int],
    *,
    sender_settings: dict[str, Any],
    now: float,
) -> int | None:
    """Change the policies; the sender's new policy, if it changed. ``sender_settings``:
    ``get_json_user_settings`` of the sender (the send has read them to render)."""
    result: int | None = None
    sub = await get_subscription(tx.conn, sender.id, target.id)
    if not sender.is_bot and sub is not None and sub.active:
        params = {"recipient_id": recipient_id, "topic": topic.lower(), "message_id": message_id}
        earlier = (await tx.conn.execute(_EARLIER_IN_TOPIC, params)).first()
        initiation = earlier is None
        current = await _current(tx, sender.id, target, topic)
        new: VisibilityPolicy | None = None
        if _applies(sender_settings["automatically_follow_topics_policy"], initiation):
            if current != VisibilityPolicy.FOLLOWED:
                new = VisibilityPolicy.FOLLOWED
        elif (
            sub.is_muted
            and _applies(
                sender_settings["automatically_unmute_topics_in_muted_streams_policy"],
                initiation,
            )
            and current not in (VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED)
        ):
            new = VisibilityPolicy.UNMUTED
        if new is not None:
            await do_set_user_topic_visibility_policy(tx, sender, target, topic, new, now=now)
            result = int(new)
    for user_id in sorted(set(mentioned_ids) & recipient_user_ids - {sender.id}):
        settings = await get_json_user_settings(tx.conn, user_id)
        if not settings["automatically_follow_topics_where_mentioned"]:
            continue
        if await _current(tx, user_id, target, topic) == VisibilityPolicy.FOLLOWED:
            continue
        user = await get_user_by_id(tx.conn, sender.realm_id, user_id)
        if user is None or user.is_bot:
            continue
        await do_set_user_topic_visibility_policy(
            tx, user, target, topic, VisibilityPolicy.FOLLOWED, now=now
        )
    return result


async def apply_participation_policy(
    tx: Tx, user: User, stream_id: int, topic: str, *, now: float
) -> None:
    """A reaction or submessage in a topic: the policies that apply on participation."""
    if user.is_bot:
        return
    settings = await get_json_user_settings(tx.conn, user.id)
    follow = settings["automatically_follow_topics_policy"]
    unmute = settings["automatically_unmute_topics_in_muted_streams_policy"]
    if _PARTICIPATION not in (follow, unmute):
        return
    sub = await get_subscription(tx.conn, user.id, stream_id)
    if sub is None or not sub.active:
        return
    if follow == _PARTICIPATION:
        new = VisibilityPolicy.FOLLOWED
    elif sub.is_muted and unmute == _PARTICIPATION:
        new = VisibilityPolicy.UNMUTED
    else:
        return
    target = await get_stream_by_id(tx.conn, user.realm_id, stream_id)
    assert target is not None
    if await _current(tx, user.id, target, topic) in (new, VisibilityPolicy.FOLLOWED):
        return
    await do_set_user_topic_visibility_policy(tx, user, target, topic, new, now=now)
