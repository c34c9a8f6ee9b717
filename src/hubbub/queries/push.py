"""Reads for push notifications: devices, recipients' notification settings, the facts of
a message a notification describes, and who is active right now."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import (
    direct_message_group_member,
    message,
    muted_user,
    push_device,
    recipient,
    stream,
    subscription,
    user_message,
    user_presence,
    user_profile,
    user_setting,
    user_topic,
)
from hubbub.models import User
from hubbub.queries.message_dicts import RECIPIENT_DIRECT_MESSAGE_GROUP, RECIPIENT_STREAM
from hubbub.user_settings import USER_SETTING_DEFAULTS


@dataclass(frozen=True)
class Device:
    id: int
    kind: int
    token: str
    ios_app_id: str | None


def _device(row: Any) -> Device:
    return Device(row.id, row.kind, row.token, row.ios_app_id)


async def get_user_devices(conn: AsyncConnection, user_id: int) -> list[Device]:
    rows = await conn.execute(
        sa.select(push_device)
        .where(push_device.c.user_profile_id == user_id)
        .order_by(push_device.c.id)
    )
    return [_device(row) for row in rows]


async def get_user_device(
    conn: AsyncConnection, user_id: int, token: str, kind: int | None = None
) -> Device | None:
    query = sa.select(push_device).where(
        push_device.c.user_profile_id == user_id, push_device.c.token == token
    )
    if kind is not None:
        query = query.where(push_device.c.kind == kind)
    row = (await conn.execute(query.order_by(push_device.c.id).limit(1))).first()
    return None if row is None else _device(row)


# Built once per dialect: every send asks it of its recipients.
_USERS_WITH_DEVICES = PerDialect(
    lambda dialect: (
        sa.select(push_device.c.user_profile_id)
        .where(dialect.in_ids(push_device.c.user_profile_id, "ids"))
        .distinct()
    )
)


async def get_users_with_devices(conn: AsyncConnection, user_ids: Collection[int]) -> set[int]:
    if not user_ids:
        return set()
    params = {"ids": ids_argument(conn, user_ids)}
    rows = await fetch_rows(conn, _USERS_WITH_DEVICES(conn), params)
    return {uid for (uid,) in rows}


@dataclass(frozen=True)
class MessagePlace:
    """Where a message was sent: a stream and topic, or (stream_id None) a conversation."""

    stream_id: int | None
    topic: str


async def get_message_place(conn: AsyncConnection, message_id: int) -> MessagePlace:
    row = (
        await conn.execute(
            sa.select(recipient.c.type, recipient.c.type_id, message.c.topic)
            .select_from(message.join(recipient, recipient.c.id == message.c.recipient_id))
            .where(message.c.id == message_id)
        )
    ).one()
    return MessagePlace(row.type_id if row.type == RECIPIENT_STREAM else None, row.topic)


@dataclass(frozen=True)
class PushRecipient:
    """What decides whether one recipient is pushed a notification for a message."""

    user_id: int
    is_bot: bool
    settings: dict[str, Any]
    muted_sender: bool
    # Stream messages only (None/0 otherwise): the subscription and topic policies.
    stream_is_muted: bool = False
    stream_push: bool | None = None
    stream_wildcard_notify: bool | None = None
    visibility_policy: int = 0


async def get_push_recipients(
    conn: AsyncConnection, user_ids: Collection[int], sender_id: int, place: MessagePlace
) -> list[PushRecipient]:
    ids = sorted(user_ids)
    rows = await conn.execute(
        sa.select(user_profile.c.id, user_profile.c.is_bot, user_setting.c.settings)
        .select_from(
            user_profile.outerjoin(
                user_setting, user_setting.c.user_profile_id == user_profile.c.id
            )
        )
        .where(user_profile.c.id.in_(ids), user_profile.c.is_active.is_(True))
    )
    base = {
        r.id: (r.is_bot, {**USER_SETTING_DEFAULTS, **orjson.loads(r.settings or "{}")})
        for r in rows
    }
    muters = {
        uid
        for (uid,) in await conn.execute(
            sa.select(muted_user.c.user_profile_id).where(
                muted_user.c.muted_user_id == sender_id, muted_user.c.user_profile_id.in_(ids)
            )
        )
    }
    subs: dict[int, Any] = {}
    policies: dict[int, int] = {}
    if place.stream_id is not None:
        for row in await conn.execute(
            sa.select(subscription).where(
                subscription.c.stream_id == place.stream_id,
                subscription.c.user_profile_id.in_(ids),
            )
        ):
            subs[row.user_profile_id] = row
        for uid, policy in await conn.execute(
            sa.select(user_topic.c.user_profile_id, user_topic.c.visibility_policy).where(
                user_topic.c.stream_id == place.stream_id,
                sa.func.lower(user_topic.c.topic_name) == place.topic.lower(),
                user_topic.c.user_profile_id.in_(ids),
            )
        ):
            policies[uid] = policy
    result = []
    for uid, (is_bot, settings) in sorted(base.items()):
        sub = subs.get(uid)
        result.append(
            PushRecipient(
                user_id=uid,
                is_bot=is_bot,
                settings=settings,
                muted_sender=uid in muters,
                stream_is_muted=bool(sub.is_muted) if sub is not None else False,
                stream_push=sub.push_notifications if sub is not None else None,
                stream_wildcard_notify=sub.wildcard_mentions_notify if sub is not None else None,
                visibility_policy=policies.get(uid, 0),
            )
        )
    return result


async def get_user_message_flags(
    conn: AsyncConnection, user_id: int, message_id: int
) -> int | None:
    return await conn.scalar(
        sa.select(user_message.c.flags).where(
            user_message.c.user_profile_id == user_id, user_message.c.message_id == message_id
        )
    )


async def is_recently_active(conn: AsyncConnection, user_id: int, since: float) -> bool:
    last_active = await conn.scalar(
        sa.select(user_presence.c.last_active_time).where(
            user_presence.c.user_profile_id == user_id
        )
    )
    return last_active is not None and last_active >= since


async def get_user_settings_of(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    text = await conn.scalar(
        sa.select(user_setting.c.settings).where(user_setting.c.user_profile_id == user_id)
    )
    return {**USER_SETTING_DEFAULTS, **orjson.loads(text or "{}")}


@dataclass(frozen=True)
class MessageRow:
    id: int
    date_sent: float
    rendered_content: str
    sender: User
    stream_id: int | None
    stream_name: str | None
    topic: str
    group_user_ids: tuple[int, ...]
    group_names: tuple[str, ...]


async def get_message_row(conn: AsyncConnection, message_id: int) -> MessageRow | None:
    row = (
        await conn.execute(
            sa.select(
                message.c.id,
                message.c.date_sent,
                message.c.rendered_content,
                message.c.sender_id,
                message.c.topic,
                recipient.c.type,
                recipient.c.type_id,
            )
            .select_from(message.join(recipient, recipient.c.id == message.c.recipient_id))
            .where(message.c.id == message_id)
        )
    ).first()
    if row is None:
        return None
    sender_row = (
        await conn.execute(sa.select(user_profile).where(user_profile.c.id == row.sender_id))
    ).one()
    stream_name = None
    group_ids: tuple[int, ...] = ()
    group_names: tuple[str, ...] = ()
    if row.type == RECIPIENT_STREAM:
        stream_name = await conn.scalar(sa.select(stream.c.name).where(stream.c.id == row.type_id))
    elif row.type == RECIPIENT_DIRECT_MESSAGE_GROUP:
        members = (
            await conn.execute(
                sa.select(user_profile.c.id, user_profile.c.full_name)
                .select_from(
                    direct_message_group_member.join(
                        user_profile,
                        user_profile.c.id == direct_message_group_member.c.user_profile_id,
                    )
                )
                .where(direct_message_group_member.c.group_id == row.type_id)
            )
        ).all()
        group_ids = tuple(sorted(m.id for m in members))
        group_names = tuple(m.full_name for m in members)
    return MessageRow(
        id=row.id,
        date_sent=row.date_sent,
        rendered_content=row.rendered_content or "",
        sender=User.from_row(sender_row),
        stream_id=row.type_id if row.type == RECIPIENT_STREAM else None,
        stream_name=stream_name,
        topic=row.topic,
        group_user_ids=group_ids,
        group_names=group_names,
    )
