"""Changing a stream's settings (``PATCH /streams/{stream_id}``) and a user's personal
subscription settings (``POST /users/me/subscriptions/properties``), with their events.

Stream changes go to everyone who can see the stream, one ``stream``/``update`` event per
changed property; a setting given its current value changes nothing and sends nothing. A
privacy change also announces the stream (``stream``/``create``, then ``peer_add`` with its
subscribers) to users who can newly see it, and withdraws it (``stream``/``delete``) from
users who no longer can, as Zulip 8.0 does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.default_streams import do_add_default_streams, do_remove_default_stream
from hubbub.actions.streams import (
    check_can_remove_subscribers_group,
    check_stream_name,
    forget_lost_subscriptions,
    parse_message_retention_days,
)
from hubbub.db.tables import stream as stream_table
from hubbub.db.tables import subscription
from hubbub.errors import (
    JsonableError,
    OrganizationAdminRequiredError,
    OrganizationOwnerRequiredError,
)
from hubbub.models import SUBSCRIPTION_SETTINGS, Realm, Stream, Subscription, User
from hubbub.permissions import Policy, user_has_permission
from hubbub.queries.streams import (
    access_stream_by_id,
    can_access_stream_metadata,
    can_access_subscribers,
    get_default_stream_ids,
    get_stream_by_id,
    get_stream_by_name,
    get_subscriber_ids,
    get_subscription,
    metadata_viewer_ids,
    stream_dict,
)
from hubbub.queries.users import list_active_users
from hubbub.rendering import render_text
from hubbub.transaction import Tx

# --- personal subscription settings -------------------------------------------------------

# Every setting but the colour is a boolean; in_home_view is is_muted's legacy inverse.
_BOOLEAN_PROPERTIES = frozenset(SUBSCRIPTION_SETTINGS) - {"color"} | {"in_home_view"}
SUBSCRIPTION_PROPERTIES = frozenset({"color", *_BOOLEAN_PROPERTIES})

# Zulip accepts three to six hex digits after the "#".
_COLOR = re.compile(r"#[0-9a-fA-F]{3,6}")


@dataclass(frozen=True)
class SubscriptionChange:
    stream: Stream
    sub: Subscription
    property: str
    value: str | bool


def _check_change_shape(index: int, change: Any) -> tuple[int, str, str | bool]:
    """One ``{stream_id, property, value}`` entry, with Zulip's validation wording."""
    name = f"subscription_data[{index}]"
    if not isinstance(change, dict):
        raise JsonableError(f"{name} is not a dict")
    for key in ("stream_id", "property", "value"):
        if key not in change:
            raise JsonableError(f"{key} key is missing from {name}")
    stream_id, prop, value = change["stream_id"], change["property"], change["value"]
    if not isinstance(stream_id, int) or isinstance(stream_id, bool):
        raise JsonableError(f'{name}["stream_id"] is not an integer')
    if not isinstance(prop, str):
        raise JsonableError(f'{name}["property"] is not a string')
    if not isinstance(value, str | bool):
        raise JsonableError(f'{name}["value"] is not an allowed_type')
    return stream_id, prop, value


def _check_property_value(prop: str, value: str | bool) -> str | bool:
    # Zulip names the property (not "value") in these messages.
    if prop == "color":
        if not isinstance(value, str):
            raise JsonableError(f"{prop} is not a string")
        if not _COLOR.fullmatch(value):
            raise JsonableError(f"{prop} is not a valid hex color code")
        return value
    if not isinstance(value, bool):
        raise JsonableError(f"{prop} is not a boolean")
    return value


async def check_subscription_changes(
    conn: AsyncConnection, user: User, data: Sequence[Any]
) -> list[SubscriptionChange]:
    """Validate every requested change before any is made (the request is all or nothing)."""
    shapes = [_check_change_shape(index, change) for index, change in enumerate(data)]
    checked = []
    for stream_id, prop, value in shapes:
        if prop not in SUBSCRIPTION_PROPERTIES:
            raise JsonableError(f"Unknown subscription property: {prop}")
        # Administrators get no special access to private streams here.
        target, sub = await access_stream_by_id(conn, user, stream_id, allow_admin=False)
        if sub is None or not sub.active:
            raise JsonableError(f"Not subscribed to stream id {stream_id}")
        checked.append(SubscriptionChange(target, sub, prop, _check_property_value(prop, value)))
    return checked


async def do_change_subscription_property(tx: Tx, user: User, change: SubscriptionChange) -> None:
    """Store one setting and tell the user. ``in_home_view`` is the inverse of ``is_muted``;
    changing either sends both properties (feature level 139), ``in_home_view`` first."""
    prop, value = change.property, change.value
    column, stored = ("is_muted", not value) if prop == "in_home_view" else (prop, value)
    await tx.conn.execute(
        sa.update(subscription).where(subscription.c.id == change.sub.id).values({column: stored})
    )
    updates: list[tuple[str, str | bool]] = [(column, stored)]
    if column == "is_muted":
        updates = [("in_home_view", not stored), ("is_muted", stored)]
    for name, event_value in updates:
        tx.notify(
            user.realm_id,
            {
                "type": "subscription",
                "op": "update",
                "stream_id": change.stream.id,
                "property": name,
                "value": event_value,
            },
            [user.id],
        )


# --- stream settings ----------------------------------------------------------------------


async def access_stream_for_update(
    conn: AsyncConnection, user: User, stream_id: int
) -> tuple[Stream, Subscription | None]:
    """Administrators may edit any stream (even a private one they are not subscribed to);
    others get Zulip's errors: an unknown or invisible stream, else "must be an admin"."""
    found = await get_stream_by_id(conn, user.realm_id, stream_id)
    if found is None:
        raise JsonableError("Invalid stream ID")
    sub = await get_subscription(conn, user.id, stream_id)
    own = sub if sub is not None and sub.active else None
    if user.is_realm_admin:
        return found, own
    if own is None and found.invite_only:
        raise JsonableError("Invalid stream ID")
    raise OrganizationAdminRequiredError()


async def check_stream_name_available(
    conn: AsyncConnection, realm_id: int, current: Stream, new_name: str
) -> str:
    """The stripped new name, unless it is the current one or another stream's (names are
    case-insensitive; a change of case alone is allowed)."""
    name = new_name.strip()
    if name == current.name:
        raise JsonableError("Stream already has that name!")
    name = check_stream_name(name)
    if name.lower() != current.name.lower():
        taken = await get_stream_by_name(conn, realm_id, name)
        if taken is not None:
            raise JsonableError(f"Stream name '{name}' is already taken.")
    return name


async def _viewers(tx: Tx, target: Stream) -> list[int]:
    users = await list_active_users(tx.conn, target.realm_id)
    subscribers = (await get_subscriber_ids(tx.conn, [target.id]))[target.id]
    return metadata_viewer_ids(target, users, subscribers)


async def _reload(tx: Tx, target: Stream) -> Stream:
    fresh = await get_stream_by_id(tx.conn, target.realm_id, target.id)
    assert fresh is not None
    return fresh


async def _notify_update(
    tx: Tx, target: Stream, prop: str, value: Any, *, name: str | None = None, **extra: Any
) -> None:
    tx.notify(
        target.realm_id,
        {
            "type": "stream",
            "op": "update",
            "stream_id": target.id,
            "name": target.name if name is None else name,
            "property": prop,
            "value": value,
            **extra,
        },
        await _viewers(tx, target),
    )


async def _store(tx: Tx, target: Stream, **values: Any) -> Stream:
    await tx.conn.execute(
        sa.update(stream_table).where(stream_table.c.id == target.id).values(**values)
    )
    return await _reload(tx, target)


async def do_change_stream_permission(
    tx: Tx, target: Stream, *, invite_only: bool, history_public: bool, is_web_public: bool
) -> Stream:
    """Change privacy, shared history and web-public status together; sends nothing when
    none of them changes."""
    if (target.invite_only, target.history_public_to_subscribers, target.is_web_public) == (
        invite_only,
        history_public,
        is_web_public,
    ):
        return target
    old = target
    new = await _store(
        tx,
        target,
        invite_only=invite_only,
        history_public_to_subscribers=history_public,
        is_web_public=is_web_public,
    )
    users = await list_active_users(tx.conn, new.realm_id)
    subscribers = (await get_subscriber_ids(tx.conn, [new.id]))[new.id]
    subscribed = set(subscribers)
    gained: list[int] = []
    lost: list[int] = []
    kept: list[int] = []
    peers: list[int] = []
    for user in users:
        is_sub = user.id in subscribed
        before = can_access_stream_metadata(user, old, is_sub)
        after = can_access_stream_metadata(user, new, is_sub)
        if after and not before:
            gained.append(user.id)
        elif before and not after:
            lost.append(user.id)
        elif after:
            kept.append(user.id)
        # Whoever newly sees the subscriber list learns it with a peer_add.
        if can_access_subscribers(user, new, is_sub) and not can_access_subscribers(
            user, old, is_sub
        ):
            peers.append(user.id)
    if gained:
        tx.notify(
            new.realm_id, {"type": "stream", "op": "create", "streams": [stream_dict(new)]}, gained
        )
    if peers and subscribers:
        tx.notify(
            new.realm_id,
            {
                "type": "subscription",
                "op": "peer_add",
                "stream_ids": [new.id],
                "user_ids": subscribers,
            },
            peers,
        )
    if kept:
        tx.notify(
            new.realm_id,
            {
                "type": "stream",
                "op": "update",
                "stream_id": new.id,
                "name": new.name,
                "property": "invite_only",
                "value": new.invite_only,
                "history_public_to_subscribers": new.history_public_to_subscribers,
                "is_web_public": new.is_web_public,
            },
            kept,
        )
    if lost:
        tx.notify(
            new.realm_id, {"type": "stream", "op": "delete", "streams": [stream_dict(new)]}, lost
        )
        await forget_lost_subscriptions(tx, new.id, lost)
    return new


async def do_change_stream_description(tx: Tx, target: Stream, description: str) -> Stream:
    if description == target.description:
        return target
    rendered = render_text(description)
    new = await _store(tx, target, description=description, rendered_description=rendered)
    await _notify_update(tx, new, "description", description, rendered_description=rendered)
    return new


async def do_rename_stream(tx: Tx, target: Stream, new_name: str) -> Stream:
    new = await _store(tx, target, name=new_name)
    # The event carries the old name in "name", as Zulip's does.
    await _notify_update(tx, new, "name", new_name, name=target.name)
    return new


async def do_change_stream_post_policy(tx: Tx, target: Stream, policy: int) -> Stream:
    if policy == target.stream_post_policy:
        return target
    new = await _store(tx, target, stream_post_policy=policy)
    await _notify_update(tx, new, "stream_post_policy", policy)
    # Zulip still sends the legacy property (replaced in feature level 1) for old clients.
    await _notify_update(tx, new, "is_announcement_only", policy == Policy.ADMINS_ONLY)
    return new


async def do_change_stream_message_retention_days(
    tx: Tx, target: Stream, days: int | None
) -> Stream:
    if days == target.message_retention_days:
        return target
    new = await _store(tx, target, message_retention_days=days)
    await _notify_update(tx, new, "message_retention_days", days)
    return new


async def do_change_can_remove_subscribers_group(tx: Tx, target: Stream, group_id: int) -> Stream:
    if group_id == target.can_remove_subscribers_group_id:
        return target
    new = await _store(tx, target, can_remove_subscribers_group_id=group_id)
    await _notify_update(tx, new, "can_remove_subscribers_group", group_id)
    return new


@dataclass
class StreamUpdate:
    """``PATCH /streams/{stream_id}``'s parameters, already parsed (None: not given)."""

    description: str | None = None
    new_name: str | None = None
    is_private: bool | None = None
    is_web_public: bool | None = None
    history_public_to_subscribers: bool | None = None
    is_default_stream: bool | None = None
    stream_post_policy: int | None = None
    # Raw, as sent: "realm_default", "unlimited", "forever" or a number (JSON or not).
    message_retention_days: str | None = None
    can_remove_subscribers_group: int | None = None


async def check_update_stream(
    tx: Tx,
    acting: User,
    realm: Realm,
    stream_id: int,
    update: StreamUpdate,
    *,
    web_public_enabled: bool,
) -> None:
    """Check every part of the update, then apply it (the caller's transaction makes it all
    or nothing). The checks and their order follow Zulip 8.0's update_stream."""
    target, own_sub = await access_stream_for_update(tx.conn, acting, stream_id)
    default_ids = await get_default_stream_ids(tx.conn, realm.id)

    is_private = target.invite_only if update.is_private is None else update.is_private
    is_web_public = target.is_web_public if update.is_web_public is None else update.is_web_public
    is_default = (
        target.id in default_ids if update.is_default_stream is None else update.is_default_stream
    )
    if update.history_public_to_subscribers is not None:
        history_public = update.history_public_to_subscribers
    elif update.is_private is not None:
        # Changing privacy alone picks each kind's default: private streams protect history.
        history_public = not update.is_private
    else:
        history_public = target.history_public_to_subscribers
    if is_web_public and (not history_public or is_private):
        raise JsonableError("Invalid parameters")
    if not is_private and not history_public:
        raise JsonableError("Invalid parameters")
    if is_private and is_default:
        raise JsonableError("A default stream cannot be private.")
    if update.is_private is not None:
        # Even administrators must be subscribed to change a private stream's privacy.
        await access_stream_by_id(tx.conn, acting, stream_id, allow_admin=False)
    if update.is_web_public:
        if not web_public_enabled or not realm.enable_spectator_access:
            raise JsonableError("Web-public streams are not enabled.")
        if not await user_has_permission(
            tx.conn, acting, realm, "can_create_web_public_channel_group"
        ):
            raise JsonableError("Insufficient permission")
    retention: int | None = None
    if update.message_retention_days is not None:
        if not acting.is_owner:
            raise OrganizationOwnerRequiredError()
        retention = parse_message_retention_days(update.message_retention_days, acting)
    new_name = (
        await check_stream_name_available(tx.conn, realm.id, target, update.new_name)
        if update.new_name is not None
        else None
    )
    group_id = update.can_remove_subscribers_group
    if group_id is not None and group_id != target.can_remove_subscribers_group_id:
        if own_sub is None and target.invite_only:
            # Administrators cannot change this for a private stream they are not on.
            raise JsonableError("Invalid stream ID")
        await check_can_remove_subscribers_group(tx.conn, realm.id, group_id)

    if (
        update.is_private is not None
        or update.is_web_public is not None
        or update.history_public_to_subscribers is not None
    ):
        target = await do_change_stream_permission(
            tx,
            target,
            invite_only=is_private,
            history_public=history_public,
            is_web_public=is_web_public,
        )
    if update.is_default_stream is not None:
        if update.is_default_stream:
            await do_add_default_streams(tx, realm, [target])
        else:
            await do_remove_default_stream(tx, realm, target, always_notify=False)
    if update.message_retention_days is not None:
        target = await do_change_stream_message_retention_days(tx, target, retention)
    if update.description is not None:
        target = await do_change_stream_description(tx, target, update.description)
    if new_name is not None:
        target = await do_rename_stream(tx, target, new_name)
    if update.stream_post_policy is not None:
        target = await do_change_stream_post_policy(tx, target, update.stream_post_policy)
    if group_id is not None:
        await do_change_can_remove_subscribers_group(tx, target, group_id)
