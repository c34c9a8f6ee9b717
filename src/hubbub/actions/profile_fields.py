"""Setting users' custom profile field values (``profile_data`` of ``PATCH /users/{id}``).

The fields themselves are defined by administrators (``/realm/profile_fields``, a later
issue); here values are validated by field type and stored, all or nothing.
"""

from __future__ import annotations

import datetime
from enum import IntEnum
from typing import Any
from urllib.parse import urlparse

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.user_events import notify_user_updated
from hubbub.db.tables import custom_profile_field, custom_profile_field_value, user_profile
from hubbub.errors import JsonableError
from hubbub.models import User
from hubbub.rendering import render_text
from hubbub.transaction import Tx


class FieldType(IntEnum):
    SHORT_TEXT = 1
    LONG_TEXT = 2
    SELECT = 3
    DATE = 4
    URL = 5
    USER = 6
    EXTERNAL_ACCOUNT = 7
    PRONOUNS = 8


MAX_SHORT_TEXT = 50
MAX_LONG_TEXT = 500
# Field types whose values are rendered to HTML (``rendered_value``).
RENDERED_TYPES = (FieldType.SHORT_TEXT, FieldType.LONG_TEXT)


def _check_text(name: str, value: Any, limit: int) -> str:
    if not isinstance(value, str):
        raise JsonableError(f"{name} is not a string")
    if len(value) > limit:
        raise JsonableError(f"{name} is too long (limit: {limit} characters)")
    return value


async def _check_value(
    conn: AsyncConnection, user: User, field: Any, value: Any
) -> tuple[str, str | None]:
    """(stored value, rendered value) for one field, or raise Zulip's error."""
    name = field.name
    kind = field.field_type
    if kind == FieldType.LONG_TEXT:
        text = _check_text(name, value, MAX_LONG_TEXT)
        return text, render_text(text)
    if kind in (FieldType.SHORT_TEXT, FieldType.PRONOUNS, FieldType.EXTERNAL_ACCOUNT):
        text = _check_text(name, value, MAX_SHORT_TEXT)
        return text, render_text(text) if kind == FieldType.SHORT_TEXT else None
    if kind == FieldType.SELECT:
        choices = orjson.loads(field.field_data or "{}")
        if not isinstance(value, str) or value not in choices:
            raise JsonableError(f"'{value}' is not a valid choice for '{name}'.")
        return value, None
    if kind == FieldType.DATE:
        try:
            datetime.date.fromisoformat(_check_text(name, value, 10))
        except ValueError:
            raise JsonableError(f"{name} is not a date") from None
        return value, None
    if kind == FieldType.URL:
        text = _check_text(name, value, 2048)
        parsed = urlparse(text)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise JsonableError(f"{name} is not a URL")
        return text, None
    if kind == FieldType.USER:
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise JsonableError(f"{name} is not a list")
        if len(set(value)) != len(value):
            raise JsonableError("Duplicate User IDs")
        found = set(
            (
                await conn.execute(
                    sa.select(user_profile.c.id).where(
                        user_profile.c.id.in_(value),
                        user_profile.c.realm_id == user.realm_id,
                        user_profile.c.is_active,
                    )
                )
            ).scalars()
        )
        for user_id in value:
            if user_id not in found:
                raise JsonableError(f"Invalid user ID: {user_id}")
        return orjson.dumps(value).decode(), None
    raise JsonableError(f"Invalid field type for {name}")


async def check_update_profile_data(tx: Tx, user: User, profile_data: list[dict[str, Any]]) -> None:
    """Validate every entry first, then write: a bad entry changes nothing."""
    conn = tx.conn
    fields = {
        row.id: row
        for row in await conn.execute(
            sa.select(custom_profile_field).where(custom_profile_field.c.realm_id == user.realm_id)
        )
    }
    writes: list[tuple[int, str | None, str | None]] = []
    for entry in profile_data:
        field_id = entry.get("id")
        if not isinstance(field_id, int) or isinstance(field_id, bool):
            raise JsonableError("profile_data[id] is not an integer")
        if "value" not in entry:
            raise JsonableError("profile_data is missing 'value'")
        field = fields.get(field_id)
        if field is None:
            raise JsonableError(f"Field id {field_id} not found.")
        value = entry["value"]
        if value is None or value == "" or value == []:
            writes.append((field_id, None, None))
            continue
        writes.append((field_id, *await _check_value(conn, user, field, value)))
    for field_id, new_value, new_rendered in writes:
        await do_set_profile_value(tx, user, field_id, new_value, new_rendered)


async def do_set_profile_value(
    tx: Tx, user: User, field_id: int, value: str | None, rendered: str | None
) -> None:
    """Set (or, with ``None``, clear) one value; a ``realm_user`` update tells everyone."""
    table = custom_profile_field_value
    await tx.conn.execute(
        sa.delete(table).where(table.c.user_profile_id == user.id, table.c.field_id == field_id)
    )
    if value is not None:
        await tx.conn.execute(
            sa.insert(table).values(
                user_profile_id=user.id, field_id=field_id, value=value, rendered_value=rendered
            )
        )
    change: dict[str, Any] = {"id": field_id, "value": value}
    if rendered is not None:
        change["rendered_value"] = rendered
    await notify_user_updated(tx, user, custom_profile_field=change)
