"""The actions of ``/user_groups`` (Zulip 10.2, feature level 372): creating, changing and
deactivating user-defined groups, their members and their subgroups.

Every endpoint refuses guests and bots. Creating needs the realm's ``can_create_groups``;
who may change what is decided by ``actions/user_group_permissions.py``. Every change is
one ``user_group`` event per kind of change, to every active user of the realm, after the
commit. Groups are deactivated, never deleted (feature levels 290 and 294).
"""

from __future__ import annotations

import time
from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.actions.user_group_permissions import (
    CannotDeactivateGroupInUseError,
    access_group_for_update,
    check_group_permission_value,
    deactivation_objections,
    default_group_settings,
)
from hubbub.actions.user_groups import (
    access_users_by_ids,
    check_member_or_admin,
    check_user_group_name,
)
from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.errors import JsonableError
from hubbub.events.queues import CAPABILITY_FORM_MARK
from hubbub.models import Realm, User
from hubbub.permissions import user_has_permission
from hubbub.queries.user_groups import (
    access_group_by_id,
    get_direct_member_ids,
    get_group,
    get_group_by_name,
    get_group_settings,
    get_recursive_subgroup_ids,
    get_subgroup_ids,
    get_user_group_dict,
)
from hubbub.queries.users import active_user_ids
from hubbub.realm_group_settings import (
    GROUP_PERMISSION_SETTINGS,
    GroupSettingValue,
    group_setting_values_equal,
)
from hubbub.transaction import Tx

# The capability with which a client keeps deactivated groups (feature level 294).
INCLUDE_DEACTIVATED_GROUPS = "include_deactivated_groups"


def _dumps(settings: dict[str, GroupSettingValue]) -> str:
    return orjson.dumps(settings, option=orjson.OPT_SORT_KEYS).decode()


async def _notify_all(tx: Tx, realm_id: int, event: dict[str, Any]) -> None:
    recipients = await active_user_ids(tx.conn, realm_id)
    tx.notify(realm_id, event, recipients)


async def _check_name_free(tx: Tx, realm_id: int, name: str) -> None:
    if await get_group_by_name(tx.conn, realm_id, name) is not None:
        raise JsonableError(f"User group '{name}' already exists.")


async def check_create_user_group(
    tx: Tx,
    acting: User,
    realm: Realm,
    *,
    name: str,
    description: str,
    members: list[int],
    subgroups: list[int],
    settings: dict[str, GroupSettingValue],
    now: float | None = None,
) -> int:
    """Create a group with ``members``, ``subgroups`` (feature level 311: whatever the
    creator's permissions on the new group) and the given ``settings``; the others take
    their defaults (``group_creator``: an anonymous group of the creator)."""
    check_member_or_admin(acting)
    if not await user_has_permission(tx.conn, acting, realm, "can_create_groups"):
        raise JsonableError("Insufficient permission")
    member_ids = await access_users_by_ids(tx.conn, realm.id, members, allow_deactivated=False)
    check_user_group_name(name)
    values = await default_group_settings(tx.conn, realm.id, acting.id)
    for setting, value in settings.items():
        values[setting] = await check_group_permission_value(tx, realm, setting, value)
    await _check_name_free(tx, realm.id, name)
    subgroup_ids = await _access_subgroups(tx, realm.id, subgroups)
    result = await tx.conn.execute(
        sa.insert(user_group).values(
            realm_id=realm.id,
            name=name,
            description=description,
            is_system_group=False,
            creator_id=acting.id,
            date_created=time.time() if now is None else now,
            settings=_dumps(values),
        )
    )
    group_id = int(result.inserted_primary_key[0])  # type: ignore[index]
    if member_ids:
        await tx.conn.execute(
            sa.insert(user_group_membership),
            [{"user_group_id": group_id, "user_profile_id": u} for u in member_ids],
        )
    if subgroup_ids:
        await tx.conn.execute(
            sa.insert(group_group_membership),
            [{"supergroup_id": group_id, "subgroup_id": s} for s in subgroup_ids],
        )
    group = await access_group_by_id(tx.conn, realm.id, group_id)
    await _notify_all(
        tx,
        realm.id,
        {"type": "user_group", "op": "add", "group": await get_user_group_dict(tx.conn, group)},
    )
    return group_id


async def check_update_user_group(
    tx: Tx,
    acting: User,
    realm: Realm,
    group_id: int,
    *,
    name: str | None,
    description: str | None,
    settings: dict[str, tuple[GroupSettingValue, GroupSettingValue | None]],
) -> None:
    """``PATCH /user_groups/{id}``: the name, the description and any setting (each a
    ``(new, old)`` pair; a given ``old`` must be the current value). A deactivated group
    may be changed too (feature level 340); reactivating one came after 10.2."""
    check_member_or_admin(acting)
    if name is None and description is None and not settings:
        raise JsonableError("No new data supplied")
    group = await access_group_for_update(
        tx.conn, acting, group_id, permission="can_manage_group", allow_deactivated=True
    )
    changes: dict[str, Any] = {}
    if name is not None and name != group.name:
        check_user_group_name(name)
        await _check_name_free(tx, realm.id, name)
        changes["name"] = name
    if description is not None and description != group.description:
        changes["description"] = description
    current = await get_group_settings(tx.conn, group)
    changed_settings: list[str] = []
    for setting in GROUP_PERMISSION_SETTINGS:
        if setting not in settings:
            continue
        new, old = settings[setting]
        if old is not None and not group_setting_values_equal(old, current[setting]):
            raise JsonableError("'old' value does not match the expected value.")
        if group_setting_values_equal(new, current[setting]):
            continue
        current[setting] = await check_group_permission_value(tx, realm, setting, new)
        changed_settings.append(setting)
    if not changes and not changed_settings:
        return
    values: dict[str, Any] = dict(changes)
    if changed_settings:
        values["settings"] = _dumps(current)
    await tx.conn.execute(sa.update(user_group).where(user_group.c.id == group.id).values(**values))
    shown = await get_user_group_dict(
        tx.conn, await access_group_by_id(tx.conn, realm.id, group.id)
    )
    # Zulip sends one event per changed property.
    for key in [*changes, *changed_settings]:
        await _notify_all(
            tx,
            realm.id,
            {"type": "user_group", "op": "update", "group_id": group.id, "data": {key: shown[key]}},
        )


async def check_deactivate_user_group(tx: Tx, acting: User, realm: Realm, group_id: int) -> None:
    """``POST /user_groups/{id}/deactivate`` (feature level 290). Clients with the
    ``include_deactivated_groups`` capability learn it as an update of ``deactivated``,
    the others as the group's removal (feature level 294)."""
    check_member_or_admin(acting)
    group = await access_group_for_update(tx.conn, acting, group_id, permission="can_manage_group")
    objections = await deactivation_objections(tx.conn, realm, group)
    if objections:
        raise CannotDeactivateGroupInUseError(objections)
    await tx.conn.execute(
        sa.update(user_group).where(user_group.c.id == group.id).values(deactivated=True)
    )
    update = {
        "type": "user_group",
        "op": "update",
        "group_id": group.id,
        "data": {"deactivated": True},
    }
    remove = {"type": "user_group", "op": "remove", "group_id": group.id}
    await _notify_all(
        tx, realm.id, {**update, CAPABILITY_FORM_MARK: [INCLUDE_DEACTIVATED_GROUPS, True]}
    )
    await _notify_all(
        tx, realm.id, {**remove, CAPABILITY_FORM_MARK: [INCLUDE_DEACTIVATED_GROUPS, False]}
    )


# ---------------------------------------------------------------------------------------
# Members and subgroups


async def _access_for_self_or_others(
    tx: Tx, acting: User, group_id: int, user_ids: list[int], *, own: str, others: str
) -> Any:
    """Joining or leaving oneself needs ``own`` (``can_join_group``/``can_leave_group``)
    or else ``others`` (``can_add_members_group``/``can_remove_members_group``); changing
    anyone else needs ``others``."""
    if user_ids == [acting.id]:
        try:
            return await access_group_for_update(tx.conn, acting, group_id, permission=own)
        except JsonableError:
            pass
    return await access_group_for_update(tx.conn, acting, group_id, permission=others)


async def check_update_group_members(
    tx: Tx,
    acting: User,
    realm: Realm,
    group_id: int,
    *,
    add: list[int],
    delete: list[int],
    add_subgroups: list[int],
    delete_subgroups: list[int],
) -> None:
    """``POST /user_groups/{id}/members``: additions, removals, then subgroups (feature
    level 311), all or nothing."""
    check_member_or_admin(acting)
    if not add and not delete and not add_subgroups and not delete_subgroups:
        raise JsonableError(
            'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or'
            ' "delete_subgroups".'
        )
    if add:
        group = await _access_for_self_or_others(
            tx, acting, group_id, add, own="can_join_group", others="can_add_members_group"
        )
        to_add = await access_users_by_ids(tx.conn, realm.id, add, allow_deactivated=False)
        existing = set(await get_direct_member_ids(tx.conn, group.id))
        for user_id in to_add:
            if user_id in existing:
                raise JsonableError(f"User {user_id} is already a member of this group")
        await tx.conn.execute(
            sa.insert(user_group_membership),
            [{"user_group_id": group.id, "user_profile_id": u} for u in to_add],
        )
        await _notify_all(
            tx,
            realm.id,
            {"type": "user_group", "op": "add_members", "group_id": group.id, "user_ids": to_add},
        )
    if delete:
        to_remove = await access_users_by_ids(tx.conn, realm.id, delete, allow_deactivated=True)
        group = await _access_for_self_or_others(
            tx, acting, group_id, delete, own="can_leave_group", others="can_remove_members_group"
        )
        existing = set(await get_direct_member_ids(tx.conn, group.id))
        for user_id in to_remove:
            if user_id not in existing:
                raise JsonableError(f"There is no member '{user_id}' in this user group")
        await tx.conn.execute(
            sa.delete(user_group_membership).where(
                user_group_membership.c.user_group_id == group.id,
                user_group_membership.c.user_profile_id.in_(to_remove),
            )
        )
        await _notify_all(
            tx,
            realm.id,
            {
                "type": "user_group",
                "op": "remove_members",
                "group_id": group.id,
                "user_ids": to_remove,
            },
        )
    await _update_subgroups(tx, acting, realm, group_id, add=add_subgroups, delete=delete_subgroups)


async def check_update_subgroups(
    tx: Tx, acting: User, realm: Realm, group_id: int, *, add: list[int], delete: list[int]
) -> None:
    """``POST /user_groups/{id}/subgroups``: any active group of the realm (system groups
    too) may be a subgroup of a user-defined group, as long as no cycle results."""
    check_member_or_admin(acting)
    if not add and not delete:
        raise JsonableError('Nothing to do. Specify at least one of "add" or "delete".')
    await _update_subgroups(tx, acting, realm, group_id, add=add, delete=delete)


async def _access_subgroups(tx: Tx, realm_id: int, subgroup_ids: list[int]) -> list[int]:
    found: list[int] = []
    for subgroup_id in subgroup_ids:
        group = await get_group(tx.conn, realm_id, subgroup_id)
        if group is None:
            raise JsonableError(f"Invalid user group ID: {subgroup_id}")
        if group.deactivated:
            raise JsonableError("User group is deactivated.")
        if subgroup_id not in found:
            found.append(subgroup_id)
    return found


async def _update_subgroups(
    tx: Tx, acting: User, realm: Realm, group_id: int, *, add: list[int], delete: list[int]
) -> None:
    if add:
        to_add = await _access_subgroups(tx, realm.id, add)
        group = await access_group_for_update(
            tx.conn, acting, group_id, permission="can_add_members_group"
        )
        existing = set(
            await get_subgroup_ids(tx.conn, realm.id, group.id, direct_subgroup_only=True)
        )
        for subgroup_id in to_add:
            if subgroup_id in existing:
                raise JsonableError(
                    f"User group {subgroup_id} is already a subgroup of this group."
                )
        if group.id in await get_recursive_subgroup_ids(tx.conn, realm.id, to_add):
            raise JsonableError(
                f"User group {group.id} is already a subgroup of one of the passed subgroups."
            )
        await tx.conn.execute(
            sa.insert(group_group_membership),
            [{"supergroup_id": group.id, "subgroup_id": s} for s in to_add],
        )
        await _notify_all(
            tx,
            realm.id,
            {
                "type": "user_group",
                "op": "add_subgroups",
                "group_id": group.id,
                "direct_subgroup_ids": to_add,
            },
        )
    if delete:
        to_remove = await _access_subgroups(tx, realm.id, delete)
        group = await access_group_for_update(
            tx.conn, acting, group_id, permission="can_remove_members_group"
        )
        existing = set(
            await get_subgroup_ids(tx.conn, realm.id, group.id, direct_subgroup_only=True)
        )
        for subgroup_id in to_remove:
            if subgroup_id not in existing:
                raise JsonableError(f"User group {subgroup_id} is not a subgroup of this group.")
        await tx.conn.execute(
            sa.delete(group_group_membership).where(
                group_group_membership.c.supergroup_id == group.id,
                group_group_membership.c.subgroup_id.in_(to_remove),
            )
        )
        await _notify_all(
            tx,
            realm.id,
            {
                "type": "user_group",
                "op": "remove_subgroups",
                "group_id": group.id,
                "direct_subgroup_ids": to_remove,
            },
        )
