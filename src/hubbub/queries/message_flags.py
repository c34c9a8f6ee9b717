"""Reads behind the personal message flags: which rows a flag change touches, who may gain
a historical row, what a client needs to put a message back among its unreads, and who has
read a message (read receipts).

Flag tests are written with literal bit values (``(flags & 1) = 0``), never bound
parameters: only then can SQLite and PostgreSQL see that a query implies the condition of
the partial ``ix_user_message_starred`` (and, on PostgreSQL, ``ix_user_message_unread``)
indexes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from hubbub.db.tables import (
    message,
    muted_user,
    recipient,
    subscription,
    user_message,
    user_profile,
    user_setting,
    user_topic,
)
from hubbub.models import User
from hubbub.queries.content_access import group_readable_streams_of
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_PERSONAL,
    RECIPIENT_STREAM,
    get_direct_message_group_members,
)
from hubbub.queries.messages import (
    HISTORICAL,
    MENTIONED,
    READ,
    STARRED,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
    flag_is,
)
from hubbub.queries.narrow_sql import history_recipients
from hubbub.user_settings import USER_SETTING_DEFAULTS

COLLAPSED = 4
# The flags a user may change (Zulip's editable API flags).
EDITABLE_FLAGS: dict[str, int] = {"read": READ, "starred": STARRED, "collapsed": COLLAPSED}
# Zulip 8.0's other API flags: known, but set only by the server. ``force_expand`` and
# ``force_collapse`` are retired bits Zulip still names; ``wildcard_mentioned`` is no longer
# a flag name since feature level 224, so it is an invalid one.
NON_EDITABLE_FLAGS = frozenset(
    {
        "mentioned",
        "stream_wildcard_mentioned",
        "topic_wildcard_mentioned",
        "group_mentioned",
        "force_expand",
        "force_collapse",
        "has_alert_word",
        "historical",
    }
)
# The flags a message the user has no row for behaves as having.
DEFAULT_HISTORICAL_FLAGS = READ | HISTORICAL
# Ids per statement: far below SQLite's and asyncpg's limits on bound parameters.
ID_CHUNK = 5000

# user_topic visibility policies.
_MUTED, _UNMUTED, _FOLLOWED = 1, 2, 3
_ANY_WILDCARD = STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED


def unread(table: sa.Table = user_message) -> ColumnElement[bool]:
    return flag_is(READ, False, table)


def chunks(ids: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), ID_CHUNK):
        yield ids[start : start + ID_CHUNK]


async def get_mute_data(
    conn: AsyncConnection, user_id: int
) -> tuple[set[int], dict[tuple[int, str], int]]:
    """The user's muted stream ids and topic visibility policies by (stream id, lower topic)."""
    muted = {
        sid
        for (sid,) in await conn.execute(
            sa.select(subscription.c.stream_id).where(
                subscription.c.user_profile_id == user_id, subscription.c.is_muted
            )
        )
    }
    policies = {
        (r.stream_id, r.topic_name.lower()): r.visibility_policy
        for r in await conn.execute(
            sa.select(
                user_topic.c.stream_id, user_topic.c.topic_name, user_topic.c.visibility_policy
            ).where(user_topic.c.user_profile_id == user_id)
        )
    }
    return muted, policies


def is_muted_topic(
    stream_id: int, topic: str, muted_streams: set[int], policies: dict[tuple[int, str], int]
) -> bool:
    """A muted topic, or a topic of a muted stream not unmuted or followed (feature
    level 170)."""
    policy = policies.get((stream_id, topic.lower()))
    if policy == _MUTED:
        return True
    if policy in (_UNMUTED, _FOLLOWED):
        return False
    return stream_id in muted_streams


async def existing_row_ids(conn: AsyncConnection, user_id: int, ids: list[int]) -> set[int]:
    found: set[int] = set()
    for part in chunks(ids):
        found.update(
            (
                await conn.execute(
                    sa.select(user_message.c.message_id).where(
                        user_message.c.user_profile_id == user_id,
                        user_message.c.message_id.in_(part),
                    )
                )
            ).scalars()
        )
    return found


async def readable_history_ids(conn: AsyncConnection, user: User, ids: list[int]) -> set[int]:
    """Those of ``ids`` in stream history the user may read without having received them
    (the same rule as the narrows that include history), locked until the transaction
    ends against a deletion (PostgreSQL ``FOR KEY SHARE``): the caller writes rows for
    them, and on PostgreSQL no foreign key on ``user_message`` (migration 0011) takes
    that lock or refuses a row for a message deleted meanwhile."""
    found: set[int] = set()
    for part in chunks(ids):
        # Private streams read through groups granting content access (feature level 354).
        granted = await group_readable_streams_of(conn, user, part)
        found.update(
            (
                await conn.execute(
                    sa.select(message.c.id)
                    .where(
                        message.c.id.in_(part),
                        message.c.realm_id == user.realm_id,
                        message.c.recipient_id.in_(history_recipients(user, granted)),
                    )
                    .with_for_update(key_share=True, of=message)
                )
            ).scalars()
        )
    return found


async def unsubscribed_stream_message_ids(
    conn: AsyncConnection, user_id: int, ids: list[int]
) -> dict[int, int]:
    """Those of ``ids`` sent to streams the user is not subscribed to, with their stream."""
    subscribed = sa.exists().where(
        subscription.c.user_profile_id == user_id,
        subscription.c.stream_id == recipient.c.type_id,
        subscription.c.active,
    )
    found: dict[int, int] = {}
    for part in chunks(ids):
        rows = await conn.execute(
            sa.select(message.c.id, recipient.c.type_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id.in_(part), recipient.c.type == RECIPIENT_STREAM, ~subscribed)
        )
        found.update((int(mid), int(stream_id)) for mid, stream_id in rows)
    return found


async def unread_message_details(
    conn: AsyncConnection, user_id: int, ids: Iterable[int]
) -> dict[str, dict[str, Any]]:
    """``message_details`` of an ``update_message_flags`` event that marks ``ids`` unread
    (feature level 121): per message its conversation, ``mentioned`` when it counts as a
    mention, and for stream messages whether it is outside muted streams and topics."""
    wanted = sorted(set(ids))
    rows: list[Any] = []
    for part in chunks(wanted):
        rows += await conn.execute(
            sa.select(
                user_message.c.message_id,
                user_message.c.flags,
                message.c.sender_id,
                message.c.topic,
                recipient.c.type,
                recipient.c.type_id,
            )
            .join(message, message.c.id == user_message.c.message_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(user_message.c.user_profile_id == user_id, user_message.c.message_id.in_(part))
        )
    muted, policies = await get_mute_data(conn, user_id)
    members = await get_direct_message_group_members(
        conn, {r.type_id for r in rows if r.type == RECIPIENT_DIRECT_MESSAGE_GROUP}
    )
    details: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda row: row.message_id):
        item: dict[str, Any]
        unmuted = True
        if r.type == RECIPIENT_STREAM:
            unmuted = not is_muted_topic(r.type_id, r.topic, muted, policies)
            # ``unmuted_stream_msg`` is deprecated but still sent by Zulip 8.0.
            item = {
                "type": "stream",
                "stream_id": r.type_id,
                "topic": r.topic,
                "unmuted_stream_msg": unmuted,
            }
        elif r.type == RECIPIENT_PERSONAL:
            other = r.sender_id if r.sender_id != user_id else r.type_id
            # The other participants, never oneself (empty for a message to oneself).
            item = {"type": "private", "user_ids": [] if other == user_id else [other]}
        else:
            others = sorted(uid for uid in members[r.type_id] if uid != user_id)
            item = {"type": "private", "user_ids": others}
        flags = int(r.flags)
        if flags & MENTIONED or (flags & _ANY_WILDCARD and unmuted):
            item["mentioned"] = True
        details[str(r.message_id)] = item
    return details


async def user_has_message_in_topic(
    conn: AsyncConnection, user_id: int, stream_id: int, topic: str
) -> bool:
    """Whether the user received (has a row for) any message of the topic."""
    found = await conn.scalar(
        sa.select(user_message.c.message_id)
        .join(message, message.c.id == user_message.c.message_id)
        .where(
            user_message.c.user_profile_id == user_id,
            message.c.recipient_id == stream_recipient(stream_id),
            sa.func.lower(message.c.topic) == topic.lower(),
        )
        .limit(1)
    )
    return found is not None


def stream_recipient(stream_id: int) -> sa.ScalarSelect[int]:
    return (
        sa.select(recipient.c.id)
        .where(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream_id)
        .scalar_subquery()
    )


async def get_read_receipt_user_ids(
    conn: AsyncConnection, viewer: User, message_id: int
) -> list[int]:
    """Who has read the message, as Zulip shows it: active users (bots included) with the
    read flag, never the sender, nobody who muted the viewer or whom the viewer muted
    (feature level 143), and nobody who turned ``send_read_receipts`` off."""
    viewer_muted = sa.select(muted_user.c.muted_user_id).where(
        muted_user.c.user_profile_id == viewer.id
    )
    muted_viewer = sa.select(muted_user.c.user_profile_id).where(
        muted_user.c.muted_user_id == viewer.id
    )
    sender = sa.select(message.c.sender_id).where(message.c.id == message_id).scalar_subquery()
    rows = await conn.execute(
        sa.select(user_message.c.user_profile_id, user_setting.c.settings)
        .join(user_profile, user_profile.c.id == user_message.c.user_profile_id)
        .outerjoin(user_setting, user_setting.c.user_profile_id == user_message.c.user_profile_id)
        .where(
            user_message.c.message_id == message_id,
            flag_is(READ, True),
            user_profile.c.is_active,
            user_message.c.user_profile_id != sender,
            user_message.c.user_profile_id.not_in(viewer_muted),
            user_message.c.user_profile_id.not_in(muted_viewer),
        )
        .order_by(user_message.c.user_profile_id)
    )
    default = USER_SETTING_DEFAULTS["send_read_receipts"]
    return [
        uid
        for uid, settings in rows
        if (orjson.loads(settings).get("send_read_receipts", default) if settings else default)
    ]
