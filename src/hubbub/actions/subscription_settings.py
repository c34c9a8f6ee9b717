"""A user's personal subscription settings (``POST /users/me/subscriptions/properties``)
and their events."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import subscription
from hubbub.errors import JsonableError
from hubbub.models import SUBSCRIPTION_SETTINGS, Stream, Subscription, User
from hubbub.queries.streams import access_stream_by_id
from hubbub.transaction import Tx

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
