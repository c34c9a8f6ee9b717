"""Creating streams, subscribing and unsubscribing users, and their events.

Every function runs in the caller's write transaction (``Tx``) and queues its events there.
Event order and recipients follow Zulip 8.0: a user who newly gains sight of a private
stream gets ``stream``/``create`` first, then their ``subscription``/``add``; everyone else
who can see the stream's subscribers gets ``peer_add``; unsubscribing mirrors this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.group_setting_values import (
    check_group_setting_value,
    parse_group_setting_value,
)
from hubbub.db.tables import stream as stream_table
from hubbub.db.tables import subscription
from hubbub.errors import JsonableError
from hubbub.json_values import load_json
from hubbub.models import Realm, Stream, User
from hubbub.permissions import user_has_permission
from hubbub.queries.group_settings import get_system_group_ids
from hubbub.queries.stream_permissions import (
    POST_POLICY_GROUPS,
    can_administer_stream,
    default_stream_settings,
    dump_stream_settings,
    legacy_post_policy,
    user_in_stream_setting,
)
from hubbub.queries.streams import (
    can_access_stream_metadata,
    get_default_stream_ids,
    get_stream_by_id,
    get_subscriber_ids,
    get_subscription,
    list_user_subscriptions,
    metadata_viewer_ids,
    stream_delete_event,
    stream_dict,
    subscriber_viewer_ids,
    subscription_dict,
)
from hubbub.queries.users import list_active_users
from hubbub.realm_group_settings import (
    ADMINISTRATORS,
    STREAM_PERMISSION_GROUP_SETTINGS,
    GroupSettingValue,
)
from hubbub.rendering import render_realm_text
from hubbub.text_checks import check_printable
from hubbub.transaction import Tx

MAX_STREAM_NAME_LENGTH = 60
MAX_STREAM_DESCRIPTION_LENGTH = 1024

# Colours given to new subscriptions, each user's unused ones first.
STREAM_COLORS = (
    "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
    "#f5ce6e", "#c2726a", "#94c849", "#bd86e5", "#ee7e4a", "#a6dcbf", "#95a5fd", "#53a063",
    "#9987e1", "#e4523d", "#c2c2c2", "#4f8de4", "#c6a8ad", "#e7cc4d", "#c8bebf", "#a47462",
)  # fmt: skip


def check_stream_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Stream name can't be empty!")
    if len(name) > MAX_STREAM_NAME_LENGTH:
        raise JsonableError(f"Stream name too long (limit: {MAX_STREAM_NAME_LENGTH} characters).")
    check_printable(name, "stream name")
    return name


def check_stream_description(description: str) -> str:
    if len(description) > MAX_STREAM_DESCRIPTION_LENGTH:
        raise JsonableError(
            f"description is too long (limit: {MAX_STREAM_DESCRIPTION_LENGTH} characters)"
        )
    # Descriptions are one line in Zulip's UI; newlines become spaces.
    return description.replace("\n", " ")


@dataclass
class StreamOptions:
    """How to create a stream that does not exist yet (ignored for existing ones)."""

    invite_only: bool = False
    is_web_public: bool = False
    history_public_to_subscribers: bool | None = None
    message_retention_days: int | None = None
    # Group-valued settings the request gave (checked); the others take their defaults.
    group_settings: dict[str, GroupSettingValue] = field(default_factory=dict)
    is_default_stream: bool = False
    descriptions: dict[str, str] = field(default_factory=dict)


def effective_history_public(
    invite_only: bool, is_web_public: bool, history_public: bool | None
) -> bool:
    """Public and web-public streams always share history; private ones don't by default."""
    if is_web_public or not invite_only:
        return True
    return bool(history_public)


async def do_create_stream(
    tx: Tx,
    realm: Realm,
    name: str,
    options: StreamOptions,
    *,
    description: str,
    now: float,
    creator: User | None = None,
    realm_url: str = "",
) -> Stream:
    system_ids = await get_system_group_ids(tx.conn, realm.id)
    settings = default_stream_settings(system_ids, creator.id if creator else None)
    settings.update(options.group_settings)
    remove_group = settings["can_remove_subscribers_group"]
    invite_only = options.invite_only and not options.is_web_public
    result = await tx.conn.execute(
        sa.insert(stream_table).values(
            realm_id=realm.id,
            name=name,
            description=description,
            rendered_description=await render_realm_text(
                tx.conn, realm.id, description, realm_url=realm_url, acting_user=creator
            ),
            date_created=now,
            invite_only=invite_only,
            is_web_public=options.is_web_public,
            history_public_to_subscribers=effective_history_public(
                invite_only, options.is_web_public, options.history_public_to_subscribers
            ),
            stream_post_policy=legacy_post_policy(settings["can_send_message_group"], system_ids),
            message_retention_days=options.message_retention_days,
            # The unread legacy column needs a group; the JSON holds the real value.
            can_remove_subscribers_group_id=(
                remove_group if isinstance(remove_group, int) else system_ids[ADMINISTRATORS]
            ),
            creator_id=creator.id if creator else None,
            is_recently_active=True,
            permission_settings=dump_stream_settings(settings),
        )
    )
    stream_id = int(result.inserted_primary_key[0])  # type: ignore[index]
    created = await get_stream_by_id(tx.conn, realm.id, stream_id)
    assert created is not None
    users = await list_active_users(tx.conn, realm.id)
    tx.notify(
        realm.id,
        {"type": "stream", "op": "create", "streams": [stream_dict(created)]},
        metadata_viewer_ids(created, users, []),
    )
    return created


def _pick_color(used: set[str], count: int) -> str:
    for color in STREAM_COLORS:
        if color not in used:
            return color
    return STREAM_COLORS[count % len(STREAM_COLORS)]


@dataclass
class SubscribeResult:
    subscribed: list[tuple[User, Stream]] = field(default_factory=list)
    already_subscribed: list[tuple[User, Stream]] = field(default_factory=list)


async def bulk_add_subscriptions(
    tx: Tx, realm: Realm, streams: Sequence[Stream], users: Sequence[User]
) -> SubscribeResult:
    """Subscribe every user to every stream (re-activating old rows, which keep their
    settings), then send Zulip's events."""
    result = SubscribeResult()
    added: dict[int, list[User]] = {s.id: [] for s in streams}
    for user in users:
        own = await list_user_subscriptions(tx.conn, user.id)
        used = {sub.color for sub in own if sub.active}
        for target in streams:
            sub = await get_subscription(tx.conn, user.id, target.id)
            if sub is not None and sub.active:
                result.already_subscribed.append((user, target))
                continue
            if sub is not None:
                await tx.conn.execute(
                    sa.update(subscription).where(subscription.c.id == sub.id).values(active=True)
                )
            else:
                color = _pick_color(used, len(own))
                used.add(color)
                await tx.conn.execute(
                    sa.insert(subscription).values(
                        user_profile_id=user.id, stream_id=target.id, color=color
                    )
                )
            result.subscribed.append((user, target))
            added[target.id].append(user)
    if result.subscribed:
        await _notify_added(tx, realm, streams, added)
    return result


async def _notify_added(
    tx: Tx, realm: Realm, streams: Sequence[Stream], added: dict[int, list[User]]
) -> None:
    subscribers = await get_subscriber_ids(tx.conn, [s.id for s in streams])
    realm_users = await list_active_users(tx.conn, realm.id)
    by_id = {s.id: s for s in streams}
    new_subs: dict[int, list[int]] = {}
    for stream_id, users in added.items():
        for user in users:
            new_subs.setdefault(user.id, []).append(stream_id)
    # Streams a new subscriber could not see before: announce them first.
    for stream_id, users in added.items():
        target = by_id[stream_id]
        newly_visible = [
            u.id for u in users if not can_access_stream_metadata(u, target, subscribed=False)
        ]
        if newly_visible:
            tx.notify(
                realm.id,
                {"type": "stream", "op": "create", "streams": [stream_dict(target)]},
                newly_visible,
            )
    for user_id, stream_ids in new_subs.items():
        dicts = []
        for stream_id in stream_ids:
            sub = await get_subscription(tx.conn, user_id, stream_id)
            assert sub is not None
            dicts.append(subscription_dict(by_id[stream_id], sub, subscribers[stream_id]))
        tx.notify(
            realm.id, {"type": "subscription", "op": "add", "subscriptions": dicts}, [user_id]
        )
    for stream_id, users in added.items():
        if not users:
            continue
        _notify_peers(
            tx,
            realm.id,
            "peer_add",
            by_id[stream_id],
            [u.id for u in users],
            realm_users,
            subscribers[stream_id],
        )


def _notify_peers(
    tx: Tx,
    realm_id: int,
    op: str,
    target: Stream,
    user_ids: Sequence[int],
    realm_users: Sequence[User],
    subscriber_ids: Sequence[int],
) -> None:
    """``peer_add``/``peer_remove`` for ``user_ids`` on ``target``, to everyone else who
    can see its subscribers."""
    changed = set(user_ids)
    peers = [
        uid
        for uid in subscriber_viewer_ids(target, realm_users, subscriber_ids)
        if uid not in changed
    ]
    if peers:
        tx.notify(
            realm_id,
            {
                "type": "subscription",
                "op": op,
                "stream_ids": [target.id],
                "user_ids": sorted(changed),
            },
            peers,
        )


async def bulk_remove_subscriptions(
    tx: Tx, realm: Realm, streams: Sequence[Stream], users: Sequence[User]
) -> tuple[list[tuple[User, Stream]], list[tuple[User, Stream]]]:
    """Unsubscribe; returns (removed, not_subscribed) pairs."""
    removed: list[tuple[User, Stream]] = []
    not_subscribed: list[tuple[User, Stream]] = []
    for user in users:
        for target in streams:
            sub = await get_subscription(tx.conn, user.id, target.id)
            if sub is None or not sub.active:
                not_subscribed.append((user, target))
                continue
            await tx.conn.execute(
                sa.update(subscription).where(subscription.c.id == sub.id).values(active=False)
            )
            removed.append((user, target))
    if removed:
        await _notify_removed(tx, realm, removed)
    return removed, not_subscribed


async def _notify_removed(tx: Tx, realm: Realm, removed: list[tuple[User, Stream]]) -> None:
    by_user: dict[int, list[Stream]] = {}
    by_stream: dict[int, list[int]] = {}
    streams: dict[int, Stream] = {}
    users: dict[int, User] = {}
    for user, target in removed:
        by_user.setdefault(user.id, []).append(target)
        by_stream.setdefault(target.id, []).append(user.id)
        streams[target.id] = target
        users[user.id] = user
    for user_id, targets in by_user.items():
        tx.notify(
            realm.id,
            {
                "type": "subscription",
                "op": "remove",
                "subscriptions": [{"stream_id": s.id, "name": s.name} for s in targets],
            },
            [user_id],
        )
        # A private stream the user may no longer see disappears from their stream list.
        lost = [
            s
            for s in targets
            if not can_access_stream_metadata(users[user_id], s, subscribed=False)
        ]
        if lost:
            tx.notify(
                realm.id,
                stream_delete_event([s.id for s in lost]),
                [user_id],
            )
            for s in lost:
                await forget_lost_subscriptions(tx, s.id, [user_id])
    subscribers = await get_subscriber_ids(tx.conn, list(by_stream))
    realm_users = await list_active_users(tx.conn, realm.id)
    for stream_id, user_ids in by_stream.items():
        _notify_peers(
            tx,
            realm.id,
            "peer_remove",
            streams[stream_id],
            user_ids,
            realm_users,
            subscribers[stream_id],
        )


def check_stream_post_policy(policy: int) -> int:
    if policy not in (1, 2, 3, 4):
        raise JsonableError("Invalid stream_post_policy")
    return policy


async def check_stream_group_settings(
    tx: Tx, realm: Realm, values: dict[str, Any]
) -> dict[str, GroupSettingValue]:
    """The given group-setting values (raw parameters; None: not given), parsed and
    checked against each setting's configuration."""
    checked: dict[str, GroupSettingValue] = {}
    for name, raw in values.items():
        value = parse_group_setting_value(raw)
        if value is None:
            continue
        config = STREAM_PERMISSION_GROUP_SETTINGS[name]
        await check_group_setting_value(tx, realm, name, config, value)
        checked[name] = value
    return checked


async def post_policy_group(tx: Tx, realm: Realm, policy: int) -> int:
    """The system group a legacy ``stream_post_policy`` means (feature level 333)."""
    system_ids = await get_system_group_ids(tx.conn, realm.id)
    return system_ids[POST_POLICY_GROUPS[policy]]


def parse_message_retention_days(raw: str, acting: User) -> int | None:
    """``realm_default`` → None, ``unlimited`` (``forever`` before feature level 91) → -1,
    or a positive number of days; only owners may set it, as in Zulip. The value may arrive
    as raw text or JSON-encoded."""
    value: object = raw
    with contextlib.suppress(orjson.JSONDecodeError):
        value = load_json("message_retention_days", raw)
    if not acting.is_owner:
        raise JsonableError("Must be an organization owner")
    if value == "realm_default":
        return None
    if value in ("unlimited", "forever"):
        return -1
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise JsonableError("Bad value for 'message_retention_days': " + str(raw))


async def check_create_stream_permission(
    conn: AsyncConnection,
    user: User,
    realm: Realm,
    *,
    invite_only: bool,
    is_web_public: bool,
    web_public_enabled: bool,
) -> None:
    if is_web_public:
        if not web_public_enabled or not realm.enable_spectator_access:
            raise JsonableError("Web-public streams are not enabled.")
        setting = "can_create_web_public_channel_group"
    elif invite_only:
        setting = "can_create_private_channel_group"
    else:
        setting = "can_create_public_channel_group"
    if not await user_has_permission(conn, user, realm, setting):
        raise JsonableError("Insufficient permission")


async def can_remove_subscribers(
    conn: AsyncConnection, realm: Realm, user: User, target: Stream
) -> bool:
    """Removing others: administrators, the stream's administrators, or members of its
    ``can_remove_subscribers_group`` (Zulip 10.2)."""
    if await can_administer_stream(conn, realm, user, target):
        return True
    return await user_in_stream_setting(conn, realm, user, target, "can_remove_subscribers_group")


async def notify_subscriber_activity(tx: Tx, user: User, active: bool) -> None:
    """A deactivated user drops out of every subscriber list (their subscription rows stay,
    for a reactivation); tell those who see the lists, with peer events as Zulip does."""
    subs = [sub for sub in await list_user_subscriptions(tx.conn, user.id) if sub.active]
    if not subs:
        return
    realm_users = await list_active_users(tx.conn, user.realm_id)
    subscribers = await get_subscriber_ids(tx.conn, [sub.stream_id for sub in subs])
    for sub in subs:
        target = await get_stream_by_id(tx.conn, user.realm_id, sub.stream_id)
        assert target is not None
        _notify_peers(
            tx,
            user.realm_id,
            "peer_add" if active else "peer_remove",
            target,
            [user.id],
            realm_users,
            subscribers[target.id],
        )


async def subscribe_to_default_streams(tx: Tx, realm: Realm, user: User) -> None:
    """New human users join the realm's default streams (bots do not), as in Zulip."""
    stream_ids = await get_default_stream_ids(tx.conn, realm.id)
    streams = [s for s in [await get_stream_by_id(tx.conn, realm.id, i) for i in stream_ids] if s]
    if streams:
        await bulk_add_subscriptions(tx, realm, streams, [user])


async def forget_lost_subscriptions(tx: Tx, stream_id: int, user_ids: Sequence[int]) -> None:
    """Drop the old (inactive) subscription rows of users who just lost sight of a stream.

    They can no longer see the stream, so the row's only use would be to list it under
    ``unsubscribed`` should it become visible again; but the ``stream``/``create`` event
    that tells them of it then puts it in ``never_subscribed``, and the fresh state must
    agree. Forgetting the row makes it so (their colour for it is forgotten too).
    """
    if not user_ids:
        return
    await tx.conn.execute(
        sa.delete(subscription).where(
            subscription.c.stream_id == stream_id,
            subscription.c.user_profile_id.in_(list(user_ids)),
            ~subscription.c.active,
        )
    )
