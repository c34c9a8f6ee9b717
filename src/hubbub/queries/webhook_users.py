"""The account an incoming webhook's ``api_key`` parameter names."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.credentials import api_keys_match
from hubbub.db.tables import user_profile
from hubbub.models import User


async def get_user_by_api_key_any_state(
    conn: AsyncConnection, realm_id: int, api_key: str
) -> User | None:
    """The realm's user (active or not) with this API key, so a deactivated account can
    be told apart from a wrong key, as Zulip does."""
    row = (
        await conn.execute(
            sa.select(user_profile).where(
                user_profile.c.realm_id == realm_id, user_profile.c.api_key == api_key
            )
        )
    ).first()
    if row is None:
        return None
    user = User.from_row(row)
    # A second, constant-time comparison: the lookup itself only narrowed the candidates.
    return user if api_keys_match(api_key, user.api_key) else None
