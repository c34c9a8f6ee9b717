"""Who may do what to a user group, by the group's own group-valued settings (Zulip 10.2).

Each user-defined group has six settings, each a group-setting value (a group id or an
anonymous group): ``can_manage_group`` (feature level 283: rename, describe, change
settings, deactivate, and everything below), ``can_mention_group`` (a group-setting value
since level 258), ``can_join_group`` (301), ``can_add_members_group`` (305),
``can_leave_group`` (308) and ``can_remove_members_group`` (324). Members of the realm's
``can_manage_all_groups`` may do everything to every user-defined group; system groups
follow roles and nobody changes them. The order of the checks, and their messages, are
those of Zulip's ``access_user_group_for_update``.
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.group_setting_values import check_group_setting_value
from hubbub.db.tables import group_group_membership, stream, user_group
from hubbub.errors import ApiError, ErrorCode, JsonableError
from hubbub.models import Realm, User
from hubbub.permissions import user_has_permission
from hubbub.queries.group_settings import (
    get_system_group_ids,
    members_of_group_setting_value,
    settings_using_group,
)
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.user_groups import access_group_by_id, get_group, get_group_settings
from hubbub.realm_group_settings import (
    GROUP_PERMISSION_SETTINGS,
    NOBODY,
    GroupSettingValue,
    anonymous_group,
)
from hubbub.transaction import Tx


async def user_in_group_setting(
    conn: AsyncConnection, realm: Realm, user: User, name: str, value: GroupSettingValue
) -> bool:
    """Whether ``user`` holds the group permission ``name`` whose value is ``value``
    (Zulip's user_has_permission_for_group_setting: guests never hold a permission that
    may not be given to everyone)."""
    if user.is_guest and not GROUP_PERMISSION_SETTINGS[name].allow_everyone_group:
        return False
    system_ids = await get_system_group_ids(conn, realm.id)
    found = await members_of_group_setting_value(
        conn, realm, value, [user], system_ids=system_ids, now=time.time()
    )
    return user.id in found


async def _realm_of(conn: AsyncConnection, user: User) -> Realm:
    realm = await get_realm_by_id(conn, user.realm_id)
    assert realm is not None
    return realm


async def access_group_for_update(
    conn: AsyncConnection,
    user: User,
    group_id: int,
    *,
    permission: str,
    allow_deactivated: bool = False,
) -> sa.Row[Any]:
    """The group ``user`` may change: ``can_manage_group`` (or the realm's
    ``can_manage_all_groups``) allows everything, ``permission`` its own action."""
    group = await access_group_by_id(conn, user.realm_id, group_id)
    if group.deactivated and not allow_deactivated:
        raise JsonableError("User group is deactivated.")
    if group.is_system_group:
        raise JsonableError("Insufficient permission")
    realm = await _realm_of(conn, user)
    if await user_has_permission(conn, user, realm, "can_manage_all_groups"):
        return group
    settings = await get_group_settings(conn, group)
    names = ["can_manage_group"]
    if permission != "can_manage_group":
        names.append(permission)
    for name in names:
        if await user_in_group_setting(conn, realm, user, name, settings[name]):
            return group
    raise JsonableError("Insufficient permission")


async def check_group_permission_value(
    tx: Tx, realm: Realm, name: str, value: GroupSettingValue
) -> GroupSettingValue:
    """A client's value for the group setting ``name``, checked and in stored form: an
    anonymous group of nobody at all is ``role:nobody`` (Zulip's
    parse_group_setting_value), and a deactivated group is no value."""
    if not isinstance(value, int) and not value["direct_members"] and not value["direct_subgroups"]:
        value = (await get_system_group_ids(tx.conn, realm.id))[NOBODY]
    await check_group_setting_value(tx, realm, name, GROUP_PERMISSION_SETTINGS[name], value)
    for group_id in [value] if isinstance(value, int) else value["direct_subgroups"]:
        group = await get_group(tx.conn, realm.id, group_id)
        if group is not None and group.deactivated:
            raise JsonableError("User group is deactivated.")
    return value


async def default_group_settings(
    conn: AsyncConnection, realm_id: int, creator_id: int
) -> dict[str, GroupSettingValue]:
    """The settings of a new user-defined group that its creator left unset: each
    setting's default group, ``group_creator`` being an anonymous group of the creator."""
    system_ids = await get_system_group_ids(conn, realm_id)
    values: dict[str, GroupSettingValue] = {}
    for name, config in GROUP_PERMISSION_SETTINGS.items():
        if config.default_group_name == "group_creator":
            values[name] = anonymous_group([creator_id], [])
        else:
            values[name] = system_ids[config.default_group_name]
    return values


def _uses(value: Any, group_id: int) -> bool:
    return value == group_id or (isinstance(value, dict) and group_id in value["direct_subgroups"])


async def deactivation_objections(
    conn: AsyncConnection, realm: Realm, group: sa.Row[Any]
) -> list[dict[str, Any]]:
    """What keeps ``group`` from being deactivated, as Zulip's
    CANNOT_DEACTIVATE_GROUP_IN_USE lists it (feature level 298): active groups that have
    it as a subgroup, channels and groups whose settings name it (directly or inside an
    anonymous group), and the organization's settings that do."""
    objections: list[dict[str, Any]] = []
    rows = await conn.execute(
        sa.select(user_group.c.id)
        .join(group_group_membership, group_group_membership.c.supergroup_id == user_group.c.id)
        .where(group_group_membership.c.subgroup_id == group.id, ~user_group.c.deactivated)
        .order_by(user_group.c.id)
    )
    supergroups = [group_id for (group_id,) in rows]
    if supergroups:
        objections.append({"type": "subgroup", "supergroup_ids": supergroups})
    objections.extend(await _channel_objections(conn, realm.id, group.id))
    others = await conn.execute(
        sa.select(user_group)
        .where(user_group.c.realm_id == realm.id, ~user_group.c.deactivated)
        .order_by(user_group.c.id)
    )
    for other in others.all():
        if other.id == group.id:
            # A group that names itself (migration 0028 made existing groups their own
            # managers) does not keep itself from being deactivated.
            continue
        settings = await get_group_settings(conn, other)
        used = [name for name, value in settings.items() if _uses(value, group.id)]
        if used:
            objections.append({"type": "user_group", "group_id": other.id, "settings": used})
    realm_settings = settings_using_group(realm, group.id)
    if realm_settings:
        objections.append({"type": "realm", "settings": realm_settings})
    return objections


async def _channel_objections(
    conn: AsyncConnection, realm_id: int, group_id: int
) -> list[dict[str, Any]]:
    """Active channels whose group-valued settings are this group (the columns named
    ``can_*_group_id`` of the stream table)."""
    columns = [c for c in stream.c if c.name.startswith("can_") and c.name.endswith("_group_id")]
    if not columns:
        return []
    rows = await conn.execute(
        sa.select(stream.c.id, *columns)
        .where(
            stream.c.realm_id == realm_id,
            ~stream.c.deactivated,
            sa.or_(*(c == group_id for c in columns)),
        )
        .order_by(stream.c.id)
    )
    found = []
    for row in rows:
        used = [c.name.removesuffix("_id") for c in columns if row._mapping[c.name] == group_id]
        found.append({"type": "channel", "channel_id": row.id, "settings": used})
    return found


class CannotDeactivateGroupInUseError(ApiError):
    """A group that a setting or a supergroup still uses (feature level 298)."""

    code = ErrorCode.CANNOT_DEACTIVATE_GROUP_IN_USE
    data_fields = ("objections",)

    def __init__(self, objections: list[dict[str, Any]]) -> None:
        super().__init__("Cannot deactivate user group in use.")
        self.objections = objections
