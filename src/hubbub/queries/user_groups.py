"""Reading user groups: ids by name, membership through subgroups, /register's list, and
each group's group-valued permission settings (Zulip 10.2)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows, named
from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.db.tables import user_profile as user_table
from hubbub.errors import JsonableError
from hubbub.realm_group_settings import GROUP_PERMISSION_SETTINGS, GroupSettingValue

# Statements every /register runs, built once (named parameters); see get_user_group_dicts.
_REALM: sa.BindParameter[int] = sa.bindparam("realm_id", type_=sa.Integer)
_GROUP_ID_BY_NAME = sa.select(user_group.c.id).where(
    user_group.c.realm_id == _REALM, user_group.c.name == sa.bindparam("name")
)
_GROUPS = sa.select(user_group).where(user_group.c.realm_id == _REALM).order_by(user_group.c.id)
# In the primary key's order, (group, user): each group's members come sorted by user id.
_MEMBERS = (
    sa.select(user_group_membership.c.user_group_id, user_group_membership.c.user_profile_id)
    .join(user_group, user_group.c.id == user_group_membership.c.user_group_id)
    .where(user_group.c.realm_id == _REALM)
    .order_by(user_group_membership.c.user_group_id, user_group_membership.c.user_profile_id)
)
_SUBGROUP_LINKS = (
    sa.select(group_group_membership.c.supergroup_id, group_group_membership.c.subgroup_id)
    .join(user_group, user_group.c.id == group_group_membership.c.supergroup_id)
    .where(user_group.c.realm_id == _REALM)
)


async def get_group_id_by_name(conn: AsyncConnection, realm_id: int, name: str) -> int:
    group_id = await conn.scalar(_GROUP_ID_BY_NAME, {"realm_id": realm_id, "name": name})
    if group_id is None:
        raise LookupError(f"realm {realm_id} has no group {name!r}")
    return int(group_id)


async def get_group(conn: AsyncConnection, realm_id: int, group_id: int) -> sa.Row[Any] | None:
    result = await conn.execute(
        sa.select(user_group).where(user_group.c.realm_id == realm_id, user_group.c.id == group_id)
    )
    return result.first()


async def access_group_by_id(conn: AsyncConnection, realm_id: int, group_id: int) -> sa.Row[Any]:
    group = await get_group(conn, realm_id, group_id)
    if group is None:
        raise JsonableError("Invalid user group")
    return group


async def _subgroup_links(conn: AsyncConnection, realm_id: int) -> list[tuple[int, int]]:
    rows = await fetch_rows(conn, _SUBGROUP_LINKS, {"realm_id": realm_id})
    return [(sup, sub) for sup, sub in rows]


def _descendants(group_id: int, links: list[tuple[int, int]]) -> set[int]:
    """``group_id`` and every group nested in it, at any depth."""
    found = {group_id}
    frontier = [group_id]
    while frontier:
        current = frontier.pop()
        for sup, sub in links:
            if sup == current and sub not in found:
                found.add(sub)
                frontier.append(sub)
    return found


async def get_recursive_group_members(
    conn: AsyncConnection, realm_id: int, group_id: int
) -> set[int]:
    groups = _descendants(group_id, await _subgroup_links(conn, realm_id))
    rows = await conn.execute(
        sa.select(user_group_membership.c.user_profile_id).where(
            user_group_membership.c.user_group_id.in_(groups)
        )
    )
    return {user_id for (user_id,) in rows}


async def is_user_in_group(
    conn: AsyncConnection, realm_id: int, user_id: int, group_id: int
) -> bool:
    groups = _descendants(group_id, await _subgroup_links(conn, realm_id))
    found = await conn.scalar(
        sa.select(user_group_membership.c.user_group_id)
        .where(
            user_group_membership.c.user_profile_id == user_id,
            user_group_membership.c.user_group_id.in_(groups),
        )
        .limit(1)
    )
    return found is not None


async def get_user_group_dicts(conn: AsyncConnection, realm_id: int) -> list[dict[str, Any]]:
    """``realm_user_groups`` of /register, deactivated groups included (callers leave them
    out for clients without ``include_deactivated_groups``): direct members and direct
    subgroups.

    The system groups alone hold about three memberships per user (everyone, members,
    full members), read at every /register. They are read in one joined statement built
    once, in the primary key's order (no sort), and fetched all at once rather than row by
    row (SQLAlchemy's per-row fetch was a large part of it)."""
    params = {"realm_id": realm_id}
    groups = [named(row) for row in await fetch_rows(conn, _GROUPS, params)]
    members: dict[int, list[int]] = {g["id"]: [] for g in groups}
    for group_id, user_id in await fetch_rows(conn, _MEMBERS, params):
        members[group_id].append(user_id)
    subgroups: dict[int, list[int]] = {g["id"]: [] for g in groups}
    for sup, sub in sorted(await _subgroup_links(conn, realm_id)):
        subgroups[sup].append(sub)
    system_ids = {g["name"]: g["id"] for g in groups if g["is_system_group"]}
    settings = {g["id"]: group_settings(g, system_ids) for g in groups}
    active = await _active_anonymous_members(conn, realm_id, settings.values())
    return [
        _group_dict(g, members[g["id"]], subgroups[g["id"]], settings[g["id"]], active)
        for g in groups
    ]


def _group_dict(
    group: Mapping[Any, Any],
    members: list[int],
    subgroups: list[int],
    settings: dict[str, GroupSettingValue],
    active: set[int],
) -> dict[str, Any]:
    date_created = group["date_created"]
    return {
        "id": group["id"],
        "name": group["name"],
        "description": group["description"],
        "members": members,
        "direct_subgroup_ids": subgroups,
        "is_system_group": bool(group["is_system_group"]),
        # Feature level 292: null for system groups and groups made before hubbub had it.
        "creator_id": group["creator_id"],
        "date_created": None if date_created is None else int(date_created),
        # Feature level 290.
        "deactivated": bool(group["deactivated"]),
        **{name: api_value(value, active) for name, value in settings.items()},
    }


def group_settings(
    group: Mapping[Any, Any], system_ids: Mapping[str, int]
) -> dict[str, GroupSettingValue]:
    """A group row's permission settings, every one of them. Creation and migration 0028
    store them all; a row written without one (by hand) gets the setting's default system
    group, or ``role:nobody`` where the default is the group's unknown creator.
    ``system_ids``: the realm's system groups, name -> id."""
    raw = group["settings"]
    stored: dict[str, Any] = orjson.loads(raw) if raw else {}
    found: dict[str, GroupSettingValue] = {}
    for name, config in GROUP_PERMISSION_SETTINGS.items():
        value = stored.get(name)
        if isinstance(value, int):
            found[name] = value
        elif isinstance(value, dict):
            found[name] = {
                "direct_members": list(value["direct_members"]),
                "direct_subgroups": list(value["direct_subgroups"]),
            }
        else:
            default = config.default_group_name
            if group["is_system_group"] and config.default_for_system_groups:
                default = config.default_for_system_groups
            found[name] = system_ids.get(default, system_ids.get("role:nobody", 0))
    return found


async def get_group_settings(
    conn: AsyncConnection, group: sa.Row[Any]
) -> dict[str, GroupSettingValue]:
    """``group_settings`` of one group row."""
    return group_settings(group._mapping, await _system_group_ids(conn, group.realm_id))


async def _system_group_ids(conn: AsyncConnection, realm_id: int) -> dict[str, int]:
    rows = await conn.execute(
        sa.select(user_group.c.name, user_group.c.id).where(
            user_group.c.realm_id == realm_id, user_group.c.is_system_group
        )
    )
    return {name: group_id for name, group_id in rows}


def api_value(value: GroupSettingValue, active: set[int]) -> GroupSettingValue:
    """A setting's value as the API shows it: an anonymous group leaves out deactivated
    users (feature level 303)."""
    if isinstance(value, int):
        return value
    return {
        "direct_members": [u for u in value["direct_members"] if u in active],
        "direct_subgroups": list(value["direct_subgroups"]),
    }


async def _active_anonymous_members(
    conn: AsyncConnection, realm_id: int, settings: Iterable[dict[str, GroupSettingValue]]
) -> set[int]:
    """The active users among those the anonymous groups of ``settings`` name."""
    named_users: set[int] = set()
    for values in settings:
        for value in values.values():
            if not isinstance(value, int):
                named_users.update(value["direct_members"])
    if not named_users:
        return set()
    rows = await conn.execute(
        sa.select(user_table.c.id).where(
            user_table.c.realm_id == realm_id,
            user_table.c.id.in_(sorted(named_users)),
            user_table.c.is_active,
        )
    )
    return {user_id for (user_id,) in rows}


async def get_group_by_name(conn: AsyncConnection, realm_id: int, name: str) -> sa.Row[Any] | None:
    result = await conn.execute(
        sa.select(user_group).where(user_group.c.realm_id == realm_id, user_group.c.name == name)
    )
    return result.first()


async def get_direct_member_ids(conn: AsyncConnection, group_id: int) -> list[int]:
    rows = await conn.execute(
        sa.select(user_group_membership.c.user_profile_id)
        .where(user_group_membership.c.user_group_id == group_id)
        .order_by(user_group_membership.c.user_profile_id)
    )
    return [user_id for (user_id,) in rows]


async def get_group_member_ids(
    conn: AsyncConnection, realm_id: int, group_id: int, *, direct_member_only: bool = False
) -> list[int]:
    """Members of the group; with ``direct_member_only`` false, also those of its
    subgroups at any depth."""
    if direct_member_only:
        return await get_direct_member_ids(conn, group_id)
    return sorted(await get_recursive_group_members(conn, realm_id, group_id))


async def get_subgroup_ids(
    conn: AsyncConnection, realm_id: int, group_id: int, *, direct_subgroup_only: bool = False
) -> list[int]:
    links = await _subgroup_links(conn, realm_id)
    if direct_subgroup_only:
        return sorted(sub for sup, sub in links if sup == group_id)
    return sorted(_descendants(group_id, links) - {group_id})


async def get_recursive_subgroup_ids(
    conn: AsyncConnection, realm_id: int, group_ids: list[int]
) -> set[int]:
    """The groups and every group nested in them, at any depth."""
    links = await _subgroup_links(conn, realm_id)
    found: set[int] = set()
    for group_id in group_ids:
        found |= _descendants(group_id, links)
    return found


async def get_supergroup_ids(conn: AsyncConnection, group_id: int) -> list[int]:
    rows = await conn.execute(
        sa.select(group_group_membership.c.supergroup_id)
        .where(group_group_membership.c.subgroup_id == group_id)
        .order_by(group_group_membership.c.supergroup_id)
    )
    return [sup for (sup,) in rows]


async def is_direct_member(conn: AsyncConnection, user_id: int, group_id: int) -> bool:
    found = await conn.scalar(
        sa.select(user_group_membership.c.user_group_id).where(
            user_group_membership.c.user_group_id == group_id,
            user_group_membership.c.user_profile_id == user_id,
        )
    )
    return found is not None


async def get_user_group_dict(conn: AsyncConnection, group: sa.Row[Any]) -> dict[str, Any]:
    """One group as ``realm_user_groups`` and ``user_group``/``add`` events show it."""
    row = group._mapping
    settings = await get_group_settings(conn, group)
    active = await _active_anonymous_members(conn, group.realm_id, [settings])
    return _group_dict(
        row,
        await get_direct_member_ids(conn, group.id),
        await get_subgroup_ids(conn, group.realm_id, group.id, direct_subgroup_only=True),
        settings,
        active,
    )
