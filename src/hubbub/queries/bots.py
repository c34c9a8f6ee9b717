"""Bots as the people who administer them see them (``realm_bots`` in ``POST /register``,
``realm_bot`` events).

An administrator administers every bot of the organization, deactivated ones included;
anyone else only the bots they own. Those are also who hear of a bot's changes: the
organization's active administrators and the bot's owner. The ``realm_user`` data every
user has is enough to talk to a bot; this is the data for managing one (its API key).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import user_profile
from hubbub.models import Role, User
from hubbub.queries.user_dicts import avatar_url

_ADMIN_ROLES = (Role.OWNER, Role.ADMINISTRATOR)

# Built once: every /register of a client that asks for realm_bot reads one of them.
_REALM_BOTS = (
    sa.select(user_profile)
    .where(user_profile.c.realm_id == sa.bindparam("realm_id"), user_profile.c.is_bot)
    .order_by(user_profile.c.id)
)
_OWNED_BOTS = _REALM_BOTS.where(user_profile.c.bot_owner_id == sa.bindparam("owner_id"))
_ACTIVE_ADMIN_IDS = (
    sa.select(user_profile.c.id)
    .where(
        user_profile.c.realm_id == sa.bindparam("realm_id"),
        user_profile.c.is_active,
        sa.or_(*(user_profile.c.role == role for role in _ADMIN_ROLES)),
    )
    .order_by(user_profile.c.id)
)


def bot_dict(bot: User) -> dict[str, Any]:
    """One bot as ``realm_bots`` and the ``realm_bot`` add event show it.

    hubbub has no default streams for bots and no outgoing-webhook or embedded-bot
    services, so those keys always hold Zulip's values for a bot without them. The avatar
    is always a URL: this data never follows ``client_gravatar``, as in Zulip.
    """
    return {
        "email": bot.email,
        "user_id": bot.id,
        "full_name": bot.full_name,
        "bot_type": bot.bot_type,
        "is_active": bot.is_active,
        "api_key": bot.api_key,
        "default_sending_stream": None,
        "default_events_register_stream": None,
        "default_all_public_streams": False,
        "avatar_url": avatar_url(bot, client_gravatar=False),
        "services": [],
        "owner_id": bot.bot_owner_id,
    }


async def list_bots_administered_by(conn: AsyncConnection, viewer: User) -> list[User]:
    """Every bot of the realm for an administrator, else the viewer's own bots; in id
    order either way (a state kept by events sorts the same way)."""
    if viewer.role in _ADMIN_ROLES:
        rows = await fetch_rows(conn, _REALM_BOTS, {"realm_id": viewer.realm_id})
    else:
        params = {"realm_id": viewer.realm_id, "owner_id": viewer.id}
        rows = await fetch_rows(conn, _OWNED_BOTS, params)
    return [User.from_row(row) for row in rows]


async def list_bots_among(
    conn: AsyncConnection, realm_id: int, user_ids: Iterable[int]
) -> list[User]:
    """The bots among ``user_ids`` of the realm, in id order."""
    ids = list(user_ids)
    if not ids:
        return []
    rows = await conn.execute(
        sa.select(user_profile)
        .where(
            user_profile.c.realm_id == realm_id,
            user_profile.c.is_bot,
            user_profile.c.id.in_(ids),
        )
        .order_by(user_profile.c.id)
    )
    return [User.from_row(row) for row in rows]


async def get_owned_bot_dicts(conn: AsyncConnection, viewer: User) -> list[dict[str, Any]]:
    """``realm_bots``: the bots ``viewer`` administers."""
    return [bot_dict(bot) for bot in await list_bots_administered_by(conn, viewer)]


async def bot_administrator_ids(conn: AsyncConnection, bot: User) -> list[int]:
    """Who hears of ``bot``'s changes: the realm's active administrators (bots with an
    administrator's role too, since their ``realm_bots`` hold every bot) and the owner."""
    rows = await fetch_rows(conn, _ACTIVE_ADMIN_IDS, {"realm_id": bot.realm_id})
    ids = {user_id for (user_id,) in rows}
    if bot.bot_owner_id is not None:
        ids.add(bot.bot_owner_id)
    return sorted(ids)
