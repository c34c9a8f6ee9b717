"""Reading user statuses (``/register`` ``user_status``, ``GET /users/{user_id}/status``).

A status is free text (at most 60 characters) and an emoji; the deprecated ``away`` flag
is, since Zulip 6.0 (feature level 148), the inverse of the user's ``presence_enabled``
setting rather than part of the status.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import user_profile, user_status
from hubbub.models import User
from hubbub.queries.presence import get_presence_disabled_user_ids
from hubbub.queries.user_settings import get_json_user_settings

UNICODE_EMOJI = "unicode_emoji"
REALM_EMOJI = "realm_emoji"
ZULIP_EXTRA_EMOJI = "zulip_extra_emoji"
MAX_STATUS_TEXT_LENGTH = 60


def format_user_status(row: Any, *, presence_enabled: bool) -> dict[str, Any]:
    """Only what is set: ``away`` when presence is off, the text when not empty, the emoji
    trio when an emoji is chosen (Zulip's ``format_user_status``)."""
    out: dict[str, Any] = {}
    if not presence_enabled:
        out["away"] = True
    if row.status_text:
        out["status_text"] = row.status_text
    if row.emoji_name:
        out["emoji_name"] = row.emoji_name
        out["emoji_code"] = row.emoji_code
        out["reaction_type"] = row.reaction_type
    return out


async def get_user_status_row(conn: AsyncConnection, user_id: int) -> Any | None:
    return (
        await conn.execute(sa.select(user_status).where(user_status.c.user_profile_id == user_id))
    ).first()


async def get_user_status_for(conn: AsyncConnection, user: User) -> dict[str, Any]:
    """One user's status as ``/register`` shows it (feature level 262): empty for a user
    who never set one, whatever their presence setting, as in Zulip."""
    row = await get_user_status_row(conn, user.id)
    if row is None:
        return {}
    settings = await get_json_user_settings(conn, user.id)
    return format_user_status(row, presence_enabled=bool(settings["presence_enabled"]))


async def get_user_status_dict(conn: AsyncConnection, realm_id: int) -> dict[str, dict[str, Any]]:
    """Statuses of the realm's active users who have one, keyed by user id string. Only
    users with a status row count: turning presence off in the settings alone does not
    make a user "away" here (as in Zulip, whose query reads status rows)."""
    away = await get_presence_disabled_user_ids(conn, realm_id)
    rows = await conn.execute(
        sa.select(user_status)
        .join(user_profile, user_profile.c.id == user_status.c.user_profile_id)
        .where(user_profile.c.realm_id == realm_id, user_profile.c.is_active)
        .order_by(user_status.c.user_profile_id)
    )
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        formatted = format_user_status(row, presence_enabled=row.user_profile_id not in away)
        if formatted:
            out[str(row.user_profile_id)] = formatted
    return out
