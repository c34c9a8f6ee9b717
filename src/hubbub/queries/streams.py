"""Reading streams and subscriptions, who may see them, and their API dictionaries.

Visibility follows Zulip 8.0:
- a public stream's metadata and subscribers are visible to every non-guest; a guest sees
  streams they are subscribed to, and web-public streams (feature level 27);
- a private stream is visible to its subscribers and to administrators (metadata and
  subscribers); a former subscriber keeps it in ``unsubscribed`` but loses its subscribers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.dialects import PerDialect, ids_argument
from hubbub.db.fast import fetch_rows, named
from hubbub.db.tables import (
    default_stream,
    realm_people_version,
    recipient,
    stream,
    stream_subscribers_version,
    subscription,
    user_profile,
)
from hubbub.errors import JsonableError, StreamDoesNotExistError
from hubbub.models import Policy, Stream, Subscription, User
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from hubbub.queries.stream_permissions import (
    METADATA_ACCESS_SETTINGS,
    has_content_access_via_groups,
    stream_setting_values,
    user_in_any_stream_setting,
)

# The send path's reads, built once: building a statement and its cache key cost more
# than running it (see docs/subsystems/storage.md).
_ACTIVE_STREAM = sa.select(stream).where(
    stream.c.realm_id == sa.bindparam("realm_id"), ~stream.c.deactivated
)
_STREAM_BY_ID = _ACTIVE_STREAM.where(stream.c.id == sa.bindparam("stream_id"))
_STREAM_BY_NAME = _ACTIVE_STREAM.where(sa.func.lower(stream.c.name) == sa.bindparam("name"))
# A send's target with its recipient row's id in the same statement (NULL until the
# stream's first message creates the row).
_STREAM_RECIPIENT = (
    sa.select(recipient.c.id)
    .where(recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == stream.c.id)
    .scalar_subquery()
    .label("recipient_id")
)
# And the counts that say whether the subscribers a process keeps are still current
# (``queries/subscriber_cache.py``): the stream's subscriber changes and the realm's
# people's (a user deactivated leaves every stream's subscribers). 0 without a row.
_SUBSCRIBERS_VERSION = sa.func.coalesce(
    sa.select(stream_subscribers_version.c.version)
    .where(stream_subscribers_version.c.stream_id == stream.c.id)
    .scalar_subquery(),
    0,
).label("subscribers_version")
_PEOPLE_VERSION = sa.func.coalesce(
    sa.select(realm_people_version.c.version)
    .where(realm_people_version.c.realm_id == stream.c.realm_id)
    .scalar_subquery(),
    0,
).label("people_version")
_SEND_STREAM_COLUMNS = (_STREAM_RECIPIENT, _SUBSCRIBERS_VERSION, _PEOPLE_VERSION)
_SEND_STREAM_BY_ID = _STREAM_BY_ID.add_columns(*_SEND_STREAM_COLUMNS)
_SEND_STREAM_BY_NAME = _STREAM_BY_NAME.add_columns(*_SEND_STREAM_COLUMNS)
# Unordered (``get_subscriber_ids`` sorts): ordered by user, SQLite's planner read every
# subscription of the realm in the order of the (user, stream) index instead of the
# stream's own, many times the cost, on every send.
_SUBSCRIBERS = PerDialect(
    lambda dialect: (
        sa.select(subscription.c.stream_id, subscription.c.user_profile_id)
        .join(user_profile, user_profile.c.id == subscription.c.user_profile_id)
        .where(
            dialect.in_ids(subscription.c.stream_id, "ids"),
            subscription.c.active,
            user_profile.c.is_active,
        )
    )
)
_SUBSCRIPTION = sa.select(subscription).where(
    subscription.c.user_profile_id == sa.bindparam("user_id"),
    subscription.c.stream_id == sa.bindparam("stream_id"),
)


async def get_stream_by_id(conn: AsyncConnection, realm_id: int, stream_id: int) -> Stream | None:
    params = {"realm_id": realm_id, "stream_id": stream_id}
    row = (await conn.execute(_STREAM_BY_ID, params)).first()
    return Stream.from_row(row) if row else None


async def get_archived_stream(
    conn: AsyncConnection, realm_id: int, stream_id: int
) -> Stream | None:
    """The stream ``stream_id`` of the realm if it is archived (else None)."""
    row = (
        await conn.execute(
            sa.select(stream).where(
                stream.c.realm_id == realm_id, stream.c.id == stream_id, stream.c.deactivated
            )
        )
    ).first()
    return Stream.from_row(row) if row else None


async def get_stream_by_name(conn: AsyncConnection, realm_id: int, name: str) -> Stream | None:
    """Stream names are case-insensitive, as in Zulip."""
    params = {"realm_id": realm_id, "name": name.lower()}
    row = (await conn.execute(_STREAM_BY_NAME, params)).first()
    return Stream.from_row(row) if row else None


class SubscribersVersion(NamedTuple):
    """The counts a stream's active subscribers depend on (migrations 0017 and 0020):
    equal counts, equal subscribers."""

    subscriptions: int
    people: int


class SendStream(NamedTuple):
    stream: Stream
    # None until the stream's first message creates the row.
    recipient_id: int | None
    # What the stream's active subscribers are as of this read (``SubscriberCache``).
    subscribers_version: SubscribersVersion


async def get_send_stream(conn: AsyncConnection, realm_id: int, to: int | str) -> SendStream | None:
    """The active stream a message goes to (by id, or by case-insensitive name), its
    recipient id and its subscribers' version, in one statement."""
    if isinstance(to, int):
        params: dict[str, Any] = {"realm_id": realm_id, "stream_id": to}
        rows = await fetch_rows(conn, _SEND_STREAM_BY_ID, params)
    else:
        params = {"realm_id": realm_id, "name": to.lower()}
        rows = await fetch_rows(conn, _SEND_STREAM_BY_NAME, params)
    if not rows:
        return None
    row = named(rows[0])  # once: on SQLite each call builds the mapping
    version = SubscribersVersion(int(row["subscribers_version"]), int(row["people_version"]))
    return SendStream(Stream.from_row(row), row["recipient_id"], version)


async def list_streams(
    conn: AsyncConnection, realm_id: int, *, include_archived: bool = False
) -> list[Stream]:
    query = sa.select(stream).where(stream.c.realm_id == realm_id).order_by(stream.c.id)
    if not include_archived:
        query = query.where(~stream.c.deactivated)
    rows = await conn.execute(query)
    return [Stream.from_row(row) for row in rows]


async def get_subscription(
    conn: AsyncConnection, user_id: int, stream_id: int
) -> Subscription | None:
    params = {"user_id": user_id, "stream_id": stream_id}
    row = (await conn.execute(_SUBSCRIPTION, params)).first()
    return Subscription.from_row(row) if row else None


async def list_user_subscriptions(
    conn: AsyncConnection, user_id: int, *, include_archived: bool = False
) -> list[Subscription]:
    """Every subscription row of the user (active or not) on streams that are not archived
    (or on every stream, with ``include_archived``)."""
    query = (
        sa.select(subscription)
        .join(stream, stream.c.id == subscription.c.stream_id)
        .where(subscription.c.user_profile_id == user_id)
        .order_by(subscription.c.stream_id)
    )
    if not include_archived:
        query = query.where(~stream.c.deactivated)
    rows = await conn.execute(query)
    return [Subscription.from_row(row) for row in rows]


async def get_subscriber_ids(
    conn: AsyncConnection, stream_ids: Iterable[int]
) -> dict[int, list[int]]:
    """Active subscribers who are active users, per stream, in id order."""
    ids = list(stream_ids)
    result: dict[int, list[int]] = {stream_id: [] for stream_id in ids}
    if not ids:
        return result
    rows = await fetch_rows(conn, _SUBSCRIBERS(conn), {"ids": ids_argument(conn, ids)})
    for stream_id, user_id in rows:
        result[stream_id].append(user_id)
    for user_ids in result.values():
        user_ids.sort()
    return result


async def is_subscribed(conn: AsyncConnection, user_id: int, stream_id: int) -> bool:
    sub = await get_subscription(conn, user_id, stream_id)
    return sub is not None and sub.active


async def get_default_stream_ids(conn: AsyncConnection, realm_id: int) -> list[int]:
    rows = await conn.execute(
        sa.select(default_stream.c.stream_id)
        .join(stream, stream.c.id == default_stream.c.stream_id)
        .where(default_stream.c.realm_id == realm_id, ~stream.c.deactivated)
        .order_by(default_stream.c.stream_id)
    )
    return [stream_id for (stream_id,) in rows]


def can_access_stream_metadata(user: User, stream: Stream, subscribed: bool) -> bool:
    if subscribed or user.is_realm_admin:
        return True
    if user.is_guest:
        return stream.is_web_public
    return stream.is_public


def can_access_subscribers(user: User, stream: Stream, subscribed: bool) -> bool:
    if subscribed or user.is_realm_admin:
        return True
    return stream.is_public and not user.is_guest


def metadata_viewer_ids(
    stream: Stream, users: Iterable[User], subscriber_ids: Iterable[int]
) -> list[int]:
    """Active users who can see the stream (and so hear of its creation and changes)."""
    subscribed = set(subscriber_ids)
    return sorted(
        u.id
        for u in users
        if u.is_active and can_access_stream_metadata(u, stream, u.id in subscribed)
    )


def subscriber_viewer_ids(
    stream: Stream, users: Iterable[User], subscriber_ids: Iterable[int]
) -> list[int]:
    """Active users who can see the stream's subscribers (and so get peer events)."""
    subscribed = set(subscriber_ids)
    return sorted(
        u.id for u in users if u.is_active and can_access_subscribers(u, stream, u.id in subscribed)
    )


def stream_dict(s: Stream, *, weekly_traffic: bool = True) -> dict[str, Any]:
    """The stream object of GET /streams, ``streams`` and stream events."""
    result: dict[str, Any] = {
        "stream_id": s.id,
        "name": s.name,
        "description": s.description,
        "rendered_description": s.rendered_description,
        "date_created": int(s.date_created),
        "invite_only": s.invite_only,
        "is_web_public": s.is_web_public,
        "stream_post_policy": s.stream_post_policy,
        "message_retention_days": s.message_retention_days,
        "history_public_to_subscribers": s.history_public_to_subscribers,
        "first_message_id": s.first_message_id,
        # Deprecated since feature level 1, still sent: "only admins may post".
        "is_announcement_only": s.stream_post_policy == Policy.ADMINS_ONLY,
        # Feature level 254: null for a stream created before creators were recorded.
        "creator_id": s.creator_id,
        # Feature levels 315 and 323.
        "is_archived": s.deactivated,
        "is_recently_active": s.is_recently_active,
    }
    # The group-valued settings (feature levels 320-357), each an id or anonymous group.
    result.update(stream_setting_values(s))
    if weekly_traffic:
        # No traffic statistics yet: null means "no information" (feature level 199).
        result["stream_weekly_traffic"] = None
    return result


def stream_delete_event(stream_ids: list[int]) -> dict[str, Any]:
    """``stream``/``delete``: ``stream_ids`` (feature level 343) beside the deprecated
    ``streams``, which holds only the ids since then."""
    return {
        "type": "stream",
        "op": "delete",
        "streams": [{"stream_id": stream_id} for stream_id in stream_ids],
        "stream_ids": list(stream_ids),
    }


def subscription_dict(
    s: Stream, sub: Subscription, subscribers: list[int] | None
) -> dict[str, Any]:
    result = stream_dict(s)
    result.update(
        color=sub.color,
        is_muted=sub.is_muted,
        # Deprecated inverse of is_muted, still sent (feature level 139).
        in_home_view=not sub.is_muted,
        pin_to_top=sub.pin_to_top,
        desktop_notifications=sub.desktop_notifications,
        audible_notifications=sub.audible_notifications,
        push_notifications=sub.push_notifications,
        email_notifications=sub.email_notifications,
        wildcard_mentions_notify=sub.wildcard_mentions_notify,
    )
    if subscribers is not None:
        result["subscribers"] = subscribers
    return result


async def access_stream_by_id(
    conn: AsyncConnection, user: User, stream_id: int, *, allow_admin: bool = True
) -> tuple[Stream, Subscription | None]:
    """The stream and the user's subscription row; "Invalid stream ID" when it does not
    exist or the user may not see it (Zulip gives the same error for both, so ids of
    private streams do not leak)."""
    found = await get_stream_by_id(conn, user.realm_id, stream_id)
    if found is None:
        raise JsonableError("Invalid stream ID")
    sub = await get_subscription(conn, user.id, stream_id)
    subscribed = sub is not None and sub.active
    if not await has_stream_access(conn, user, found, subscribed, content=not allow_admin):
        raise JsonableError("Invalid stream ID")
    return found, sub


async def has_stream_access(
    conn: AsyncConnection, user: User, target: Stream, subscribed: bool, *, content: bool
) -> bool:
    """Whether ``user`` may read the stream's messages (``content``) or only see it.

    As in Zulip 10.2: a private stream's messages are readable to its subscribers and to
    the members of its groups granting content access (feature level 354); it is visible
    to those, to the organization's administrators and to its own administrators
    (``can_administer_channel_group``, feature level 349)."""
    if subscribed or target.is_web_public or (target.is_public and not user.is_guest):
        return True
    if user.is_guest:
        return False
    if await has_content_access_via_groups(conn, user, target):
        return True
    if content:
        return False
    return user.is_realm_admin or await user_in_any_stream_setting(
        conn, user, target, METADATA_ACCESS_SETTINGS
    )


async def access_stream_by_name(conn: AsyncConnection, user: User, name: str) -> Stream:
    found = await get_stream_by_name(conn, user.realm_id, name)
    if found is None:
        raise StreamDoesNotExistError(name)
    subscribed = await is_subscribed(conn, user.id, found.id)
    if not await has_stream_access(conn, user, found, subscribed, content=False):
        raise StreamDoesNotExistError(name)
    return found
