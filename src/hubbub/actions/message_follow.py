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
from hubbub.db.fast import fetch_rows, named
from hubbub.db.tables import message, subscription, user_topic
from hubbub.models import Stream, User
from hubbub.queries.streams import get_stream_by_id, get_subscription
from hubbub.queries.user_settings import get_json_user_settings
from hubbub.queries.user_topics import VisibilityPolicy, get_user_topic
from hubbub.queries.users import get_user_by_id
from hubbub.transaction import Tx

_PARTICIPATION, _SEND, _INITIATION = 1, 2, 3

# What the sender's policies depend on, in one statement (every stream send asks): the
# sender's subscription (NULL when not an active subscriber, else whether it is muted),
# whether the topic had a message before this one, and the sender's policy for the topic
# (NULL: none; matched case-insensitively, as the unique index on lower(topic_name)).
_SENDER_TOPIC_STATE = sa.select(
    sa.select(subscription.c.is_muted)
    .where(
        subscription.c.user_profile_id == sa.bindparam("user_id"),
        subscription.c.stream_id == sa.bindparam("stream_id"),
        subscription.c.active,
    )
    .scalar_subquery()
    .label("muted"),
    sa.exists(
        sa.select(message.c.id).where(
            message.c.recipient_id == sa.bindparam("recipient_id"),
            sa.func.lower(message.c.topic) == sa.bindparam("topic"),
            message.c.id != sa.bindparam("message_id"),
        )
    ).label("earlier"),
    sa.select(user_topic.c.visibility_policy)
    .where(
        user_topic.c.user_profile_id == sa.bindparam("user_id"),
        user_topic.c.stream_id == sa.bindparam("stream_id"),
        sa.func.lower(user_topic.c.topic_name) == sa.bindparam("topic"),
    )
    .scalar_subquery()
    .label("current"),
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
    if not sender.is_bot:
        state = {
            "user_id": sender.id,
            "stream_id": target.id,
            "recipient_id": recipient_id,
            "topic": topic.lower(),
            "message_id": message_id,
        }
        new = await _sender_policy(tx, state, sender_settings)
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


async def _sender_policy(
    tx: Tx, params: dict[str, Any], sender_settings: dict[str, Any]
) -> VisibilityPolicy | None:
    """The policy the sender's settings give the topic, if it changes (only for an active
    subscriber); ``params``: those of ``_SENDER_TOPIC_STATE``."""
    [row] = await fetch_rows(tx.conn, _SENDER_TOPIC_STATE, params)
    state = named(row)
    if state["muted"] is None:
        return None
    initiation = not state["earlier"]
    current = VisibilityPolicy.INHERIT if state["current"] is None else int(state["current"])
    if _applies(sender_settings["automatically_follow_topics_policy"], initiation):
        return VisibilityPolicy.FOLLOWED if current != VisibilityPolicy.FOLLOWED else None
    unmute = sender_settings["automatically_unmute_topics_in_muted_streams_policy"]
    if (
        state["muted"]
        and _applies(unmute, initiation)
        and current not in (VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED)
    ):
        return VisibilityPolicy.UNMUTED
    return None


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
