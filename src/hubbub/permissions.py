"""Who may do what in an organization.

Since Zulip 10.0 the organization's permissions are group-valued settings
(``realm_group_settings.py``): ``user_has_permission`` is the one check every action uses.
The numbered ``Policy`` values remain for a channel's ``stream_post_policy``.
"""

from __future__ import annotations

from enum import IntEnum

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.models import Realm, User
from hubbub.queries.group_settings import users_in_group_setting
from hubbub.realm_group_settings import REALM_PERMISSION_GROUP_SETTINGS


class Policy(IntEnum):
    """Who may do something, in Zulip's numbering."""

    MEMBERS_ONLY = 1
    ADMINS_ONLY = 2
    FULL_MEMBERS_ONLY = 3
    MODERATORS_ONLY = 4
    EVERYONE = 5
    NOBODY = 6
    OWNERS_ONLY = 7


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
