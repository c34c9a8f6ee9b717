"""Changing a stream's settings (``PATCH /streams/{stream_id}``), with their events (a
user's own subscription settings are in ``subscription_settings.py``).

Stream changes go to everyone who can see the stream, one ``stream``/``update`` event per
changed property; a setting given its current value changes nothing and sends nothing. A
privacy change also announces the stream (``stream``/``create``, then ``peer_add`` with its
subscribers) to users who can newly see it, and withdraws it (``stream``/``delete``) from
users who no longer can, as Zulip 8.0 does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.default_streams import do_add_default_streams, do_remove_default_stream
from hubbub.actions.group_setting_values import (
    check_group_setting_value,
    parse_group_setting_value,
)
from hubbub.actions.streams import (
    check_stream_name,
    forget_lost_subscriptions,
    parse_message_retention_days,
    post_policy_group,
)
from hubbub.db.tables import stream as stream_table
from hubbub.errors import (
    JsonableError,
    OrganizationAdminRequiredError,
    OrganizationOwnerRequiredError,
)
from hubbub.models import Policy, Realm, Stream, Subscription, User
from hubbub.permissions import user_has_permission
from hubbub.queries.group_settings import get_system_group_ids
from hubbub.queries.stream_permissions import (
    STREAM_SETTING_NAMES,
    can_administer_stream,
    dump_stream_settings,
    legacy_post_policy,
    stream_setting_values,
)
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
    stream_delete_event,
    stream_dict,
)
from hubbub.queries.users import list_active_users
from hubbub.realm_group_settings import (
    STREAM_PERMISSION_GROUP_SETTINGS,
    GroupSettingValue,
    group_setting_values_equal,
)
from hubbub.rendering import render_realm_text
from hubbub.transaction import Tx

CANNOT_ADMINISTER = "You do not have permission to administer this channel."

# --- stream settings ----------------------------------------------------------------------


async def access_stream_for_update(
    conn: AsyncConnection, realm: Realm, user: User, stream_id: int
) -> tuple[Stream, Subscription | None]:
    """The stream, for a user who may administer it: an organization administrator, or a
    member of its ``can_administer_channel_group`` (feature level 325). Others get
    Zulip 10.2's errors: "Invalid stream ID" unless they can read the stream."""
    found = await get_stream_by_id(conn, user.realm_id, stream_id)
    if found is None:
        raise JsonableError("Invalid stream ID")
    sub = await get_subscription(conn, user.id, stream_id)
    own = sub if sub is not None and sub.active else None
    if await can_administer_stream(conn, realm, user, found):
        return found, own
    readable = found.is_web_public or own is not None or (found.is_public and not user.is_guest)
    if not readable:
        raise JsonableError("Invalid stream ID")
    raise JsonableError(CANNOT_ADMINISTER)


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
        tx.notify(new.realm_id, stream_delete_event([new.id]), lost)
        await forget_lost_subscriptions(tx, new.id, lost)
    return new


async def do_change_stream_description(
    tx: Tx,
    target: Stream,
    description: str,
    *,
    acting_user: User | None = None,
    realm_url: str = "",
) -> Stream:
    """Channel links in the new description go only to channels ``acting_user`` (its
    writer) may read, as in Zulip."""
    if description == target.description:
        return target
    rendered = await render_realm_text(
        tx.conn, target.realm_id, description, realm_url=realm_url, acting_user=acting_user
    )
    new = await _store(tx, target, description=description, rendered_description=rendered)
    await _notify_update(tx, new, "description", description, rendered_description=rendered)
    return new


async def do_rename_stream(tx: Tx, target: Stream, new_name: str) -> Stream:
    new = await _store(tx, target, name=new_name)
    # The event carries the old name in "name", as Zulip's does.
    await _notify_update(tx, new, "name", new_name, name=target.name)
    return new


async def do_change_stream_group_setting(
    tx: Tx, target: Stream, name: str, value: GroupSettingValue
) -> Stream:
    """Store one group-valued setting and tell who can see the stream; a new
    ``can_send_message_group`` also updates the deprecated ``stream_post_policy`` (and its
    older ``is_announcement_only``) when that changes, as Zulip 10.2 does."""
    values = stream_setting_values(target)
    values[name] = value
    system_ids = await get_system_group_ids(tx.conn, target.realm_id)
    stored: dict[str, Any] = {"permission_settings": dump_stream_settings(values)}
    policy = target.stream_post_policy
    if name == "can_send_message_group":
        policy = legacy_post_policy(value, system_ids)
        stored["stream_post_policy"] = policy
    new = await _store(tx, target, **stored)
    await _notify_update(tx, new, name, value)
    if policy != target.stream_post_policy:
        await _notify_update(tx, new, "stream_post_policy", policy)
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
    # Setting name -> {"new": value, "old": value (optional)}, as sent.
    group_settings: dict[str, Any] = field(default_factory=dict)


async def _check_group_changes(
    tx: Tx, realm: Realm, target: Stream, update: StreamUpdate
) -> list[tuple[str, GroupSettingValue]]:
    """The group settings that change, checked: a given ``old`` must be the current value,
    and a ``new`` equal to the current value changes nothing."""
    requested = dict(update.group_settings)
    if update.stream_post_policy is not None and "can_send_message_group" not in requested:
        # The legacy parameter (replaced at feature level 333) names a system group.
        requested["can_send_message_group"] = {
            "new": await post_policy_group(tx, realm, update.stream_post_policy)
        }
    current = stream_setting_values(target)
    changes: list[tuple[str, GroupSettingValue]] = []
    for name in STREAM_SETTING_NAMES:
        if name not in requested:
            continue
        new = parse_group_setting_value(requested[name].get("new"))
        assert new is not None
        old = parse_group_setting_value(requested[name].get("old"))
        now = current.get(name)
        if old is not None and (now is None or not group_setting_values_equal(old, now)):
            raise JsonableError("'old' value does not match the expected value.")
        if now is not None and group_setting_values_equal(new, now):
            continue
        config = STREAM_PERMISSION_GROUP_SETTINGS[name]
        await check_group_setting_value(tx, realm, name, config, new)
        changes.append((name, new))
    return changes


async def check_update_stream(
    tx: Tx,
    acting: User,
    realm: Realm,
    stream_id: int,
    update: StreamUpdate,
    *,
    web_public_enabled: bool,
    realm_url: str = "",
) -> None:
    """Check every part of the update, then apply it (the caller's transaction makes it all
    or nothing). The checks and their order follow Zulip 8.0's update_stream.
    ``realm_url`` makes the description's links into the realm relative, as in messages."""
    target, _own_sub = await access_stream_for_update(tx.conn, realm, acting, stream_id)
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
    if update.is_default_stream is not None and not acting.is_realm_admin:
        raise OrganizationAdminRequiredError()
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
    group_changes = await _check_group_changes(tx, realm, target, update)

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
        target = await do_change_stream_description(
            tx, target, update.description, acting_user=acting, realm_url=realm_url
        )
    if new_name is not None:
        target = await do_rename_stream(tx, target, new_name)
    for name, value in group_changes:
        target = await do_change_stream_group_setting(tx, target, name, value)
