"""The full names in use in an organization, for its unique-names rule."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import user_profile


async def list_full_names(
    conn: AsyncConnection, realm_id: int, *, except_user_id: int | None = None
) -> list[str]:
    """Every user's full name in the realm (deactivated users and bots too), but for
    ``except_user_id``'s own."""
    query = sa.select(user_profile.c.full_name).where(user_profile.c.realm_id == realm_id)
    if except_user_id is not None:
        query = query.where(user_profile.c.id != except_user_id)
    return list((await conn.scalars(query)).all())
