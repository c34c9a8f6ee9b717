"""Reading a user's settings and the realm's defaults for new users' settings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_value
from hubbub.db.tables import realm, realm_user_default, user_profile, user_setting
from hubbub.user_settings import REALM_DEFAULT_KEYS, USER_SETTING_DEFAULTS, merged

_STORED_SETTINGS = sa.select(user_setting.c.settings).where(
    user_setting.c.user_profile_id == sa.bindparam("user_id")
)


async def get_stored_user_settings(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    """The user's ``user_setting`` overrides (empty when the row is missing). The
    statement is built once: every send reads the sender's."""
    text = await fetch_value(conn, _STORED_SETTINGS, {"user_id": user_id})
    return orjson.loads(text) if text else {}


async def get_json_user_settings(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    """Every setting but the column-backed ``timezone`` and ``email_address_visibility``,
    in one statement (the send path reads two users' settings this way)."""
    return merged(await get_stored_user_settings(conn, user_id))


async def get_user_settings(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    """Every setting of the user, the column-backed ones read fresh from ``user_profile``."""
    values = await get_json_user_settings(conn, user_id)
    row = (
        await conn.execute(
            sa.select(user_profile.c.timezone, user_profile.c.email_address_visibility).where(
                user_profile.c.id == user_id
            )
        )
    ).one()
    values["timezone"] = row.timezone
    values["email_address_visibility"] = row.email_address_visibility
    return values


# How the JSON column spells the one override that matters to typing notifications: the
# column is always written by orjson (compact, no spaces), so a substring test finds the
# candidate rows without decoding every user's settings.
_NO_TYPING_TEXT = '%"receives_typing_notifications":false%'


async def get_typing_opt_out_ids(conn: AsyncConnection, user_ids: Iterable[int]) -> set[int]:
    """Which of ``user_ids`` turned ``receives_typing_notifications`` off (feature level
    253). One statement, whatever the number of users."""
    ids = list(user_ids)
    if not ids:
        return set()
    rows = await conn.execute(
        sa.select(user_setting.c.user_profile_id, user_setting.c.settings).where(
            user_setting.c.user_profile_id.in_(ids), user_setting.c.settings.like(_NO_TYPING_TEXT)
        )
    )
    return {
        row.user_profile_id
        for row in rows
        if orjson.loads(row.settings).get("receives_typing_notifications") is False
    }


async def get_stored_realm_user_defaults(conn: AsyncConnection, realm_id: int) -> dict[str, Any]:
    text = await conn.scalar(
        sa.select(realm_user_default.c.settings).where(realm_user_default.c.realm_id == realm_id)
    )
    return orjson.loads(text) if text else {}


async def get_realm_user_defaults(conn: AsyncConnection, realm_id: int) -> dict[str, Any]:
    """The defaults new users of the realm start from, keyed as /register shows them.

    ``email_address_visibility`` lives in the realm's ``default_email_address_visibility``
    column (the one user creation reads); the rest in ``realm_user_default``."""
    stored = await get_stored_realm_user_defaults(conn, realm_id)
    values = {name: stored.get(name, USER_SETTING_DEFAULTS[name]) for name in REALM_DEFAULT_KEYS}
    values["email_address_visibility"] = await conn.scalar(
        sa.select(realm.c.default_email_address_visibility).where(realm.c.id == realm_id)
    )
    return values
