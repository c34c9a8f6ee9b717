"""Who lets administrators export their private data (``allow_private_data_export``,
feature level 293), as ``GET /export/realm/consents`` lists it (feature level 295)."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import user_profile, user_setting
from hubbub.user_settings import USER_SETTING_DEFAULTS

_SETTING = "allow_private_data_export"


async def get_export_consents(conn: AsyncConnection, realm_id: int) -> list[dict[str, Any]]:
    """One entry per active human user of the realm (bots have no private data of their
    own to consent for), by user id: ``{"user_id", "consented"}``."""
    rows = await conn.execute(
        sa.select(user_profile.c.id, user_setting.c.settings)
        .select_from(user_profile)
        .outerjoin(user_setting, user_setting.c.user_profile_id == user_profile.c.id)
        .where(
            user_profile.c.realm_id == realm_id,
            user_profile.c.is_active,
            sa.not_(user_profile.c.is_bot),
        )
        .order_by(user_profile.c.id)
    )
    default = bool(USER_SETTING_DEFAULTS[_SETTING])
    consents = []
    for user_id, settings in rows:
        stored = orjson.loads(settings) if settings else {}
        consents.append({"user_id": int(user_id), "consented": bool(stored.get(_SETTING, default))})
    return consents
