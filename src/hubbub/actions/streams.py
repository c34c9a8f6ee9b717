"""Creating streams, subscribing and unsubscribing users, and their events.

Every function runs in the caller's write transaction (``Tx``) and queues its events there.
Event order and recipients follow Zulip 8.0: a user who newly gains sight of a private
stream gets ``stream``/``create`` first, then their ``subscription``/``add``; everyone else
who can see the stream's subscribers gets ``peer_add``; unsubscribing mirrors this.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from hubbub.db.tables import stream as stream_table
from hubbub.db.tables import subscription
from hubbub.errors import JsonableError
from hubbub.models import Realm, Stream, User
from hubbub.queries.streams import (
    can_access_stream_metadata,
    get_stream_by_id,
    get_subscriber_ids,
    get_subscription,
    list_user_subscriptions,
    metadata_viewer_ids,
    stream_dict,
    subscriber_viewer_ids,
    subscription_dict,
)
from hubbub.queries.user_groups import get_group_id_by_name
from hubbub.queries.users import list_active_users
from hubbub.rendering import render_text
from hubbub.transaction import Tx

MAX_STREAM_NAME_LENGTH = 60
MAX_STREAM_DESCRIPTION_LENGTH = 1024

# Colours given to new subscriptions, each user's unused ones first.
STREAM_COLORS = (
    "#76ce90", "#fae589", "#a6c7e5", "#e79ab5", "#bfd56f", "#f4ae55", "#b0a5fd", "#addfe5",
    "#f5ce6e", "#c2726a", "#94c849", "#bd86e5", "#ee7e4a", "#a6dcbf", "#95a5fd", "#53a063",
    "#9987e1", "#e4523d", "#c2c2c2", "#4f8de4", "#c6a8ad", "#e7cc4d", "#c8bebf", "#a47462",
)  # fmt: skip

# Unicode non-characters, which Zulip refuses in names (besides control characters).
_NON_CHARACTERS = frozenset(
    [chr(c) for c in range(0xFDD0, 0xFDF0)]
    + [chr(plane + low) for plane in range(0, 0x110000, 0x10000) for low in (0xFFFE, 0xFFFF)]
)


def check_stream_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Stream name can't be empty!")
    if len(name) > MAX_STREAM_NAME_LENGTH:
        raise JsonableError(f"Stream name too long (limit: {MAX_STREAM_NAME_LENGTH} characters).")
    for position, char in enumerate(name):
        if unicodedata.category(char) in ("Cc", "Cs") or char in _NON_CHARACTERS:
            raise JsonableError(f"Invalid character in stream name, at position {position + 1}!")
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
    stream_post_policy: int = 1
    message_retention_days: int | None = None
    can_remove_subscribers_group_id: int | None = None
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
) -> Stream:
    group_id = options.can_remove_subscribers_group_id or await get_group_id_by_name(
        tx.conn, realm.id, "role:administrators"
    )
    invite_only = options.invite_only and not options.is_web_public
    result = await tx.conn.execute(
        sa.insert(stream_table).values(
            realm_id=realm.id,
            name=name,
            description=description,
            rendered_description=render_text(description),
            date_created=now,
            invite_only=invite_only,
            is_web_public=options.is_web_public,
            history_public_to_subscribers=effective_history_public(
                invite_only, options.is_web_public, options.history_public_to_subscribers
            ),
            stream_post_policy=options.stream_post_policy,
            message_retention_days=options.message_retention_days,
            can_remove_subscribers_group_id=group_id,
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
        new_ids = {u.id for u in users}
        peers = [
            uid
            for uid in subscriber_viewer_ids(by_id[stream_id], realm_users, subscribers[stream_id])
            if uid not in new_ids
        ]
        if peers:
            tx.notify(
                realm.id,
                {
                    "type": "subscription",
                    "op": "peer_add",
                    "stream_ids": [stream_id],
                    "user_ids": sorted(new_ids),
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
                {"type": "stream", "op": "delete", "streams": [stream_dict(s) for s in lost]},
                [user_id],
            )
    subscribers = await get_subscriber_ids(tx.conn, list(by_stream))
    realm_users = await list_active_users(tx.conn, realm.id)
    for stream_id, user_ids in by_stream.items():
        peers = [
            uid
            for uid in subscriber_viewer_ids(
                streams[stream_id], realm_users, subscribers[stream_id]
            )
            if uid not in user_ids
        ]
        if peers:
            tx.notify(
                realm.id,
                {
                    "type": "subscription",
                    "op": "peer_remove",
                    "stream_ids": [stream_id],
                    "user_ids": sorted(user_ids),
                },
                peers,
            )
