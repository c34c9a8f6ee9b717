"""Reading user groups: ids by name, membership through subgroups, /register's list."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows, named
from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.errors import JsonableError

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
    """``realm_user_groups`` of /register: direct members and direct subgroups.

    The system groups alone hold ~3 memberships per user (everyone, members, full
    members): 3,000 rows on a 1,000-user realm, read at every /register. They are read
    in one joined statement built once, in the primary key's order (no sort), and fetched
    all at once rather than row by row (SQLAlchemy's per-row fetch was a third of it):
    ``inprocess.py register``, see docs/performance.md."""
    params = {"realm_id": realm_id}
    groups = [named(row) for row in await fetch_rows(conn, _GROUPS, params)]
    members: dict[int, list[int]] = {g["id"]: [] for g in groups}
    for group_id, user_id in await fetch_rows(conn, _MEMBERS, params):
        members[group_id].append(user_id)
    subgroups: dict[int, list[int]] = {g["id"]: [] for g in groups}
    for sup, sub in sorted(await _subgroup_links(conn, realm_id)):
        subgroups[sup].append(sub)
    return [
        {
            "id": g["id"],
            "name": g["name"],
            "description": g["description"],
            "members": members[g["id"]],
            "direct_subgroup_ids": subgroups[g["id"]],
            "is_system_group": g["is_system_group"],
            "can_mention_group": g["can_mention_group_id"],
        }
        for g in groups
    ]


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
    return {
        "id": group.id,
        "name": group.name,
        "description": group.description,
        "members": await get_direct_member_ids(conn, group.id),
        "direct_subgroup_ids": await get_subgroup_ids(
            conn, group.realm_id, group.id, direct_subgroup_only=True
        ),
        "is_system_group": group.is_system_group,
        "can_mention_group": group.can_mention_group_id,
    }
