"""Who may do what in an organization.

Since Zulip 10.0 the organization's permissions are group-valued settings
(``realm_group_settings.py``): ``user_has_permission`` is the one check every action uses.
The numbered ``Policy`` values remain for a channel's deprecated ``stream_post_policy``;
a channel's own group settings are checked in ``queries/stream_permissions.py``.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import stream as stream_table
from hubbub.db.tables import subscription
from hubbub.errors import JsonableError
from hubbub.models import Realm, Stream, User
from hubbub.queries.group_settings import users_in_group_setting
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.stream_permissions import user_in_stream_setting
from hubbub.queries.users import get_user_by_id
from hubbub.realm_group_settings import REALM_PERMISSION_GROUP_SETTINGS


async def user_has_permission(
    conn: AsyncConnection, user: User, realm: Realm, setting: str, *, now: float | None = None
) -> bool:
    """Whether ``user`` holds the organization permission ``setting`` (one of
    ``REALM_PERMISSION_GROUP_SETTINGS``): membership of the setting's group, except that a
    guest never holds a permission whose setting may not be "everyone" (Zulip's
    user_has_permission_for_group_setting)."""
    if user.is_guest and not REALM_PERMISSION_GROUP_SETTINGS[setting].allow_everyone_group:
        return False
    return user.id in await users_in_group_setting(conn, realm, setting, [user], now=now)


async def any_user_in_group_setting(
    conn: AsyncConnection, realm: Realm, setting: str, users: list[User]
) -> bool:
    """Whether any of ``users`` belongs to the group of ``setting`` (membership alone)."""
    return bool(await users_in_group_setting(conn, realm, setting, users))


# Wildcard mentions reaching at most this many people are always allowed (Zulip's
# WILDCARD_MENTION_THRESHOLD).
WILDCARD_MENTION_THRESHOLD = 15


# --- streams --------------------------------------------------------------------------

CANNOT_POST = "You do not have permission to post in this channel."


async def check_stream_send_permission(conn: AsyncConnection, sender: User, target: Stream) -> None:
    """Refuse a sender outside the stream's ``can_send_message_group`` (feature level 333);
    a bot may post where its owner may, as in Zulip 10.2."""
    # The deprecated policy column is 1 (anyone) exactly when the group is role:everyone.
    if target.stream_post_policy == 1:
        return
    realm = await get_realm_by_id(conn, sender.realm_id)
    assert realm is not None
    if await user_in_stream_setting(conn, realm, sender, target, "can_send_message_group"):
        return
    if sender.is_bot and sender.bot_owner_id is not None:
        owner = await get_user_by_id(conn, sender.realm_id, sender.bot_owner_id)
        if owner is not None and await user_in_stream_setting(
            conn, realm, owner, target, "can_send_message_group"
        ):
            return
    raise JsonableError(CANNOT_POST)


async def check_not_archived_target(conn: AsyncConnection, sender: User, to: int | str) -> None:
    """A message to an archived stream that the sender could see is refused as Zulip 10.2
    refuses it. Archived streams keep their rows, but their names are free for new streams,
    so by name this finds only an archived stream that no active one shares a name with."""
    query = sa.select(stream_table.c.id, stream_table.c.name, stream_table.c.invite_only).where(
        stream_table.c.realm_id == sender.realm_id, stream_table.c.deactivated
    )
    if isinstance(to, int):
        query = query.where(stream_table.c.id == to)
    else:
        query = query.where(sa.func.lower(stream_table.c.name) == to.lower())
    row = (await conn.execute(query.limit(1))).first()
    if row is None:
        return
    if row.invite_only and not sender.is_realm_admin:
        subscribed = await conn.execute(
            sa.select(subscription.c.id).where(
                subscription.c.stream_id == row.id,
                subscription.c.user_profile_id == sender.id,
                subscription.c.active,
            )
        )
        if subscribed.first() is None:
            return  # a private stream the sender cannot see stays unknown
    raise JsonableError(f"Not authorized to send to channel '{row.name}'")
