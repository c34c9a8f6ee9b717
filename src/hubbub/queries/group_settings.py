"""Reading the organization's group-valued settings and who belongs to them.

A user belongs to a setting's group when they are one of its anonymous group's direct
members, or belong to one of its groups (the setting's group id, or an anonymous group's
subgroups) through nesting at any depth. Membership of a system group follows the user's
role, not the ``user_group_membership`` rows: ``role:fullmembers`` holds moderators and
above, and members whose account is at least ``waiting_period_threshold`` days old (Zulip's
full members), whatever the realm's period was when the rows were written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.db.tables import user_profile as user_table
from hubbub.models import Realm, Role, User
from hubbub.realm_group_settings import (
    ADMINISTRATORS,
    EVERYONE,
    FULL_MEMBERS,
    INTERNET,
    MEMBERS,
    MODERATORS,
    OWNERS,
    REALM_PERMISSION_GROUP_SETTINGS,
    GroupSettingValue,
    default_group_name,
)

SECONDS_PER_DAY = 86400

_REALM: sa.BindParameter[int] = sa.bindparam("realm_id", type_=sa.Integer)
_SYSTEM_GROUPS = sa.select(user_group.c.id, user_group.c.name).where(
    user_group.c.realm_id == _REALM, user_group.c.is_system_group
)
_SUBGROUP_LINKS = (
    sa.select(group_group_membership.c.supergroup_id, group_group_membership.c.subgroup_id)
    .join(user_group, user_group.c.id == group_group_membership.c.supergroup_id)
    .where(user_group.c.realm_id == _REALM)
)


async def get_system_group_ids(conn: AsyncConnection, realm_id: int) -> dict[str, int]:
    """The realm's system groups: name -> id."""
    rows = await fetch_rows(conn, _SYSTEM_GROUPS, {"realm_id": realm_id})
    return {name: group_id for group_id, name in rows}


def stored_group_setting(realm: Realm, name: str) -> GroupSettingValue | None:
    """The value ``PATCH /realm`` stored for ``name``; None if it was never set."""
    value = realm.settings.get(name)
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return {
        "direct_members": list(value["direct_members"]),
        "direct_subgroups": list(value["direct_subgroups"]),
    }


def is_full_member(user: User, realm: Realm, now: float) -> bool:
    if user.role in (Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR):
        return True
    if user.role != Role.MEMBER:
        return False
    days = int(realm.setting("waiting_period_threshold"))
    return (now - user.date_joined) // SECONDS_PER_DAY >= days


def in_system_group(name: str, role: int, *, full_member: bool) -> bool:
    """Whether a user of ``role`` belongs to the system group ``name`` (with what nests in
    it: owners within administrators within moderators ... within everyone)."""
    if name in (EVERYONE, INTERNET):
        return True
    if name == MEMBERS:
        return role != Role.GUEST
    if name == FULL_MEMBERS:
        return full_member
    if name == MODERATORS:
        return role in (Role.OWNER, Role.ADMINISTRATOR, Role.MODERATOR)
    if name == ADMINISTRATORS:
        return role in (Role.OWNER, Role.ADMINISTRATOR)
    if name == OWNERS:
        return role == Role.OWNER
    return False  # role:nobody


async def _descendants(conn: AsyncConnection, realm_id: int, group_ids: Iterable[int]) -> set[int]:
    links = await fetch_rows(conn, _SUBGROUP_LINKS, {"realm_id": realm_id})
    children: dict[int, list[int]] = {}
    for supergroup_id, subgroup_id in links:
        children.setdefault(supergroup_id, []).append(subgroup_id)
    found = set(group_ids)
    frontier = list(found)
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child not in found:
                found.add(child)
                frontier.append(child)
    return found


async def members_of_group_setting_value(
    conn: AsyncConnection,
    realm: Realm,
    value: GroupSettingValue,
    users: list[User],
    *,
    system_ids: dict[str, int],
    now: float,
) -> set[int]:
    """Which of ``users`` (active users of ``realm``) belong to ``value``'s group."""
    if isinstance(value, int):
        direct: set[int] = set()
        subgroups = {value}
    else:
        direct = set(value["direct_members"])
        subgroups = set(value["direct_subgroups"])
    found = {u.id for u in users if u.id in direct}
    rest = [u for u in users if u.id not in found]
    if not rest or not subgroups:
        return found
    system_names = {group_id: name for name, group_id in system_ids.items()}
    # A system group's nested groups are system groups too, so only a named group needs
    # the realm's subgroup links.
    if not subgroups <= system_names.keys():
        subgroups = await _descendants(conn, realm.id, subgroups)
    names = [system_names[g] for g in subgroups if g in system_names]
    for user in rest:
        full = is_full_member(user, realm, now)
        if any(in_system_group(n, user.role, full_member=full) for n in names):
            found.add(user.id)
    named = [g for g in subgroups if g not in system_names]
    pending = [u.id for u in rest if u.id not in found]
    if named and pending:
        rows = await conn.execute(
            sa.select(user_group_membership.c.user_profile_id)
            .where(
                user_group_membership.c.user_group_id.in_(named),
                user_group_membership.c.user_profile_id.in_(pending),
            )
            .distinct()
        )
        found.update(user_id for (user_id,) in rows)
    return found


async def users_in_group_setting(
    conn: AsyncConnection,
    realm: Realm,
    name: str,
    users: list[User],
    *,
    now: float | None = None,
) -> set[int]:
    """Which of ``users`` belong to the group of the realm's setting ``name`` (membership
    only: ``user_has_permission`` adds the rule for guests)."""
    at = time.time() if now is None else now
    stored = stored_group_setting(realm, name)
    if stored is None:
        # A default is a system group; no need to read the realm's groups.
        group = default_group_name(realm.settings, name)
        return {
            u.id
            for u in users
            if in_system_group(group, u.role, full_member=is_full_member(u, realm, at))
        }
    system_ids = await get_system_group_ids(conn, realm.id)
    return await members_of_group_setting_value(
        conn, realm, stored, users, system_ids=system_ids, now=at
    )


async def get_group_setting_values(
    conn: AsyncConnection,
    realm: Realm,
    names: Iterable[str] | None = None,
    *,
    system_ids: dict[str, int] | None = None,
) -> dict[str, GroupSettingValue]:
    """The settings' values as the API shows them: a group id, or an anonymous group whose
    ``direct_members`` leave out deactivated users (feature level 303). ``system_ids``:
    the realm's system groups, when the caller has read them."""
    wanted = list(REALM_PERMISSION_GROUP_SETTINGS) if names is None else list(names)
    if system_ids is None:
        system_ids = await get_system_group_ids(conn, realm.id)
    values: dict[str, GroupSettingValue] = {}
    anonymous_members: set[int] = set()
    for name in wanted:
        stored = stored_group_setting(realm, name)
        if stored is None:
            values[name] = system_ids[default_group_name(realm.settings, name)]
        else:
            values[name] = stored
            if not isinstance(stored, int):
                anonymous_members.update(stored["direct_members"])
    if anonymous_members:
        active = await active_among(conn, realm.id, anonymous_members)
        for value in values.values():
            if not isinstance(value, int):
                value["direct_members"] = [u for u in value["direct_members"] if u in active]
    return values


async def active_among(conn: AsyncConnection, realm_id: int, user_ids: Iterable[int]) -> set[int]:
    rows = await conn.execute(
        sa.select(user_table.c.id).where(
            user_table.c.realm_id == realm_id,
            user_table.c.id.in_(list(user_ids)),
            user_table.c.is_active,
        )
    )
    return {user_id for (user_id,) in rows}


def settings_using_group(realm: Realm, group_id: int) -> list[str]:
    """The realm's group-valued settings whose stored value is ``group_id`` or an anonymous
    group with ``group_id`` among its subgroups."""
    found = []
    for name in REALM_PERMISSION_GROUP_SETTINGS:
        stored: Any = stored_group_setting(realm, name)
        if stored == group_id or (
            isinstance(stored, dict) and group_id in stored["direct_subgroups"]
        ):
            found.append(name)
    return found
