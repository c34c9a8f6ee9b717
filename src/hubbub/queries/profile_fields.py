"""Custom profile fields as Zulip 10.2 shows them (``GET /realm/profile_fields``, the
``custom_profile_fields`` state and event), and the catalogues clients read with them."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import custom_profile_field
from hubbub.errors import JsonableError


class FieldType(IntEnum):
    SHORT_TEXT = 1
    LONG_TEXT = 2
    SELECT = 3
    DATE = 4
    URL = 5
    USER = 6
    EXTERNAL_ACCOUNT = 7
    PRONOUNS = 8  # feature level 151


# ``custom_profile_field_types`` exactly as Zulip 8.0 sends it: keyed by the type's
# keyword, with the labels of 8.0 ("Short text", "Person picker"; renamed after 8.0).
FIELD_TYPE_CATALOGUE: dict[str, dict[str, Any]] = {
    "SHORT_TEXT": {"id": 1, "name": "Short text"},
    "LONG_TEXT": {"id": 2, "name": "Long text"},
    "DATE": {"id": 4, "name": "Date picker"},
    "URL": {"id": 5, "name": "Link"},
    "EXTERNAL_ACCOUNT": {"id": 7, "name": "External account"},
    "PRONOUNS": {"id": 8, "name": "Pronouns"},
    "SELECT": {"id": 3, "name": "List of options"},
    "USER": {"id": 6, "name": "Person picker"},
}

# Zulip 8.0's default external accounts (``realm_default_external_accounts``): a field
# created with one of these subtypes takes its name and hint from here.
DEFAULT_EXTERNAL_ACCOUNTS: dict[str, dict[str, str]] = {
    "twitter": {
        "text": "Twitter",
        "url_pattern": "https://twitter.com/%(username)s",
        "name": "Twitter username",
        "hint": "",
    },
    "github": {
        "text": "GitHub",
        "url_pattern": "https://github.com/%(username)s",
        "name": "GitHub username",
        "hint": "",
    },
}

# Only these types keep ``field_data``; the others store "".
TYPES_WITH_FIELD_DATA = (FieldType.SELECT, FieldType.EXTERNAL_ACCOUNT)
MAX_NAME_LENGTH = 40
MAX_HINT_LENGTH = 80
MAX_SUMMARY_FIELDS = 2


def field_dict(row: Any) -> dict[str, Any]:
    """One field as the API shows it: always ``required`` (feature level 244) and
    ``editable_by_user`` (feature level 296); ``display_in_profile_summary`` only when true
    (as Zulip does since feature level 146)."""
    result: dict[str, Any] = {
        "id": row.id,
        "name": row.name,
        "type": row.field_type,
        "hint": row.hint,
        "field_data": row.field_data,
        "order": row.order,
        "required": row.required,
        "editable_by_user": row.editable_by_user,
    }
    if row.display_in_profile_summary:
        result["display_in_profile_summary"] = True
    return result


async def list_field_rows(conn: AsyncConnection, realm_id: int) -> list[Any]:
    return list(
        await conn.execute(
            sa.select(custom_profile_field)
            .where(custom_profile_field.c.realm_id == realm_id)
            .order_by(custom_profile_field.c.order, custom_profile_field.c.id)
        )
    )


async def list_fields(conn: AsyncConnection, realm_id: int) -> list[dict[str, Any]]:
    """The realm's fields in display order."""
    return [field_dict(row) for row in await list_field_rows(conn, realm_id)]


async def get_field(conn: AsyncConnection, realm_id: int, field_id: int) -> Any | None:
    return (
        await conn.execute(
            sa.select(custom_profile_field).where(
                custom_profile_field.c.realm_id == realm_id,
                custom_profile_field.c.id == field_id,
            )
        )
    ).first()


async def access_field(conn: AsyncConnection, realm_id: int, field_id: int) -> Any:
    """The realm's field, or Zulip's error (another realm's field is "not found" too)."""
    row = await get_field(conn, realm_id, field_id)
    if row is None:
        raise JsonableError(f"Field id {field_id} not found.")
    return row


async def field_name_taken(
    conn: AsyncConnection, realm_id: int, name: str, *, exclude_id: int | None = None
) -> bool:
    """Whether another field of the realm has this exact name (the unique constraint)."""
    query = sa.select(custom_profile_field.c.id).where(
        custom_profile_field.c.realm_id == realm_id, custom_profile_field.c.name == name
    )
    if exclude_id is not None:
        query = query.where(custom_profile_field.c.id != exclude_id)
    return (await conn.execute(query)).first() is not None


async def count_summary_fields(
    conn: AsyncConnection, realm_id: int, *, exclude_id: int | None = None
) -> int:
    query = (
        sa.select(sa.func.count())
        .select_from(custom_profile_field)
        .where(
            custom_profile_field.c.realm_id == realm_id,
            custom_profile_field.c.display_in_profile_summary,
        )
    )
    if exclude_id is not None:
        query = query.where(custom_profile_field.c.id != exclude_id)
    return int((await conn.execute(query)).scalar_one())
