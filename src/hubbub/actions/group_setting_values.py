"""Reading and checking one group-setting value, for any object that has such settings.

The organization, its channels and its user groups each have group-valued permission
settings (Zulip 10.2, feature level 372). A value arrives as a group id or as an anonymous
group ``{"direct_members": [...], "direct_subgroups": [...]}``; each setting's
``GroupPermissionSetting`` says which groups it accepts. Zulip's
``access_user_group_for_setting`` and ``parse_group_setting_value`` give the rules and the
error messages followed here.
"""

from __future__ import annotations

from typing import Any

from hubbub.actions.user_groups import access_users_by_ids
from hubbub.errors import JsonableError
from hubbub.models import Realm
from hubbub.queries.user_groups import get_group
from hubbub.realm_group_settings import (
    EVERYONE,
    INTERNET,
    NOBODY,
    GroupPermissionSetting,
    GroupSettingValue,
    anonymous_group,
    normalize_group_setting_value,
)
from hubbub.transaction import Tx


def parse_group_setting_value(value: Any) -> GroupSettingValue | None:
    """A value as parameters declare it (an int, or an object of two id lists), in
    canonical form; an anonymous group of one subgroup and no members is that subgroup.
    None stays None (an optional ``old`` that was not given)."""
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return normalize_group_setting_value(
        anonymous_group(list(value["direct_members"]), list(value["direct_subgroups"]))
    )


async def check_group_for_setting(
    tx: Tx, realm: Realm, name: str, config: GroupPermissionSetting, group_id: int
) -> None:
    """A group id for the setting ``name``: a group of the realm that ``config`` allows."""
    group = await get_group(tx.conn, realm.id, group_id)
    if group is None:
        raise JsonableError("Invalid user group")
    if config.require_system_group and not group.is_system_group:
        raise JsonableError(f"'{name}' must be a system user group.")
    for forbidden, allowed in (
        (INTERNET, config.allow_internet_group),
        (NOBODY, config.allow_nobody_group),
        (EVERYONE, config.allow_everyone_group),
    ):
        if not allowed and group.name == forbidden:
            raise JsonableError(f"'{name}' setting cannot be set to '{forbidden}' group.")
    if config.allowed_system_groups and group.name not in config.allowed_system_groups:
        raise JsonableError(f"'{name}' setting cannot be set to '{group.name}' group.")


async def check_group_setting_value(
    tx: Tx, realm: Realm, name: str, config: GroupPermissionSetting, value: GroupSettingValue
) -> None:
    """Refuse a value ``config`` does not accept: a group id it does not allow, or an
    anonymous group (for a setting that requires a system group) naming users or groups
    that are not active in the realm."""
    if isinstance(value, int):
        await check_group_for_setting(tx, realm, name, config, value)
        return
    if config.require_system_group:
        raise JsonableError(f"'{name}' must be a system user group.")
    await access_users_by_ids(tx.conn, realm.id, value["direct_members"], allow_deactivated=False)
    for subgroup_id in value["direct_subgroups"]:
        if await get_group(tx.conn, realm.id, subgroup_id) is None:
            raise JsonableError(f"Invalid user group ID: {subgroup_id}")
