"""Users a user has muted (feature level 48): their messages arrive already read and are
hidden by clients."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import muted_user


async def list_muted_users(conn: AsyncConnection, user_id: int) -> list[dict[str, Any]]:
    """``muted_users`` as /register and the event show it, oldest mute first."""
    rows = await conn.execute(
        sa.select(muted_user.c.muted_user_id, muted_user.c.date_muted)
        .where(muted_user.c.user_profile_id == user_id)
        .order_by(muted_user.c.date_muted, muted_user.c.muted_user_id)
    )
    return [{"id": muted_id, "timestamp": int(when)} for muted_id, when in rows]


async def is_muted(conn: AsyncConnection, user_id: int, muted_user_id: int) -> bool:
    row = await conn.execute(
        sa.select(muted_user.c.muted_user_id).where(
            muted_user.c.user_profile_id == user_id, muted_user.c.muted_user_id == muted_user_id
        )
    )
    return row.first() is not None


async def get_muting_user_ids(conn: AsyncConnection, muted_user_id: int) -> set[int]:
    """Who muted ``muted_user_id``: for a message they send, these recipients get it as
    read and without notifications."""
    rows = await conn.execute(
        sa.select(muted_user.c.user_profile_id).where(muted_user.c.muted_user_id == muted_user_id)
    )
    return set(rows.scalars())
