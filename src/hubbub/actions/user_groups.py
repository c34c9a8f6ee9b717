"""User groups: Zulip's system groups ("role:members", ...), kept in step with user roles,
and the user-defined groups of ``/user_groups`` (below).

Each realm gets the eight system groups when it is created. A user is a *direct* member of
the groups of their role; the groups nest (owners ⊂ administrators ⊂ moderators ⊂
fullmembers ⊂ members ⊂ everyone ⊂ internet), so membership of a wider group follows
through subgroups. The rows make every member a full member; permission checks follow the
realm's waiting period instead (``queries/group_settings.py``).
Stream permissions (``can_remove_subscribers_group``) name these groups.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.errors import JsonableError
from hubbub.models import Realm, Role, User
from hubbub.permissions import user_has_permission
from hubbub.queries.group_settings import settings_using_group
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.user_groups import (
    access_group_by_id,
    get_direct_member_ids,
    get_group,
    get_group_by_name,
    get_group_id_by_name,
    get_recursive_subgroup_ids,
    get_subgroup_ids,
    get_supergroup_ids,
    get_user_group_dict,
    is_direct_member,
)
from hubbub.queries.users import active_user_ids, get_user_by_id
from hubbub.transaction import Tx

# (name, description, direct subgroup); the subgroup links are made once all exist.
SYSTEM_GROUPS: tuple[tuple[str, str, str | None], ...] = (
    ("role:internet", "Everyone on the internet", "role:everyone"),
    ("role:everyone", "Everyone including guests", "role:members"),
    ("role:members", "Everyone except guests", "role:fullmembers"),
    (
        "role:fullmembers",
        "Members of this organization, not including new accounts and guests",
        "role:moderators",
    ),
    (
        "role:moderators",
        "Moderators of this organization, including administrators",
        "role:administrators",
    ),
    ("role:administrators", "Administrators of this organization, including owners", "role:owners"),
    ("role:owners", "Owners of this organization", None),
    ("role:nobody", "Nobody", None),
)

# The groups a user of each role is a direct member of.
ROLE_GROUPS: dict[Role, tuple[str, ...]] = {
    Role.OWNER: ("role:owners",),
    Role.ADMINISTRATOR: ("role:administrators",),
    Role.MODERATOR: ("role:moderators",),
    Role.MEMBER: ("role:members", "role:fullmembers"),
    Role.GUEST: ("role:everyone",),
}


async def do_create_system_groups(conn: AsyncConnection, realm_id: int) -> dict[str, int]:
    """Create the realm's system groups (no events: the realm has no users yet)."""
    ids: dict[str, int] = {}
    for name, description, _ in SYSTEM_GROUPS:
        result = await conn.execute(
            sa.insert(user_group).values(
                realm_id=realm_id, name=name, description=description, is_system_group=True
            )
        )
        ids[name] = int(result.inserted_primary_key[0])  # type: ignore[index]
    # System groups can be mentioned by nobody (Zulip's default for system groups).
    await conn.execute(
        sa.update(user_group)
        .where(user_group.c.id.in_(ids.values()))
        .values(can_mention_group_id=ids["role:nobody"])
    )
    links = [
        {"supergroup_id": ids[name], "subgroup_id": ids[sub]}
        for name, _, sub in SYSTEM_GROUPS
        if sub is not None
    ]
    await conn.execute(sa.insert(group_group_membership), links)
    return ids


async def _system_group_ids(conn: AsyncConnection, realm_id: int) -> dict[str, int]:
    rows = await conn.execute(
        sa.select(user_group.c.name, user_group.c.id).where(
            user_group.c.realm_id == realm_id, user_group.c.is_system_group
        )
    )
    return {name: group_id for name, group_id in rows}


async def do_update_role_groups(tx: Tx, user: User, old_role: Role | None) -> None:
    """Move ``user``'s direct memberships from ``old_role``'s groups (None: a new user) to
    those of ``user.role``, with ``user_group`` events to every active user."""
    before = set(ROLE_GROUPS[old_role]) if old_role is not None else set()
    after = set(ROLE_GROUPS[Role(user.role)])
    if before == after:
        return
    ids = await _system_group_ids(tx.conn, user.realm_id)
    removed = sorted(ids[name] for name in before - after)
    added = sorted(ids[name] for name in after - before)
    if removed:
        await tx.conn.execute(
            sa.delete(user_group_membership).where(
                user_group_membership.c.user_profile_id == user.id,
                user_group_membership.c.user_group_id.in_(removed),
            )
        )
    if added:
        await tx.conn.execute(
            sa.insert(user_group_membership),
            [{"user_group_id": g, "user_profile_id": user.id} for g in added],
        )
    recipients = await active_user_ids(tx.conn, user.realm_id)
    for group_id in removed:
        tx.notify(
            user.realm_id,
            {
                "type": "user_group",
                "op": "remove_members",
                "group_id": group_id,
                "user_ids": [user.id],
            },
            recipients,
        )
    for group_id in added:
        tx.notify(
            user.realm_id,
            {
                "type": "user_group",
                "op": "add_members",
                "group_id": group_id,
                "user_ids": [user.id],
            },
            recipients,
        )


# ---------------------------------------------------------------------------------------
# User-defined groups: ``/user_groups`` (Zulip 8.0, feature level 237).
#
# Who may do what: reading and changing need a member (not a guest, not a bot); creating
# needs the realm's ``can_create_groups`` (feature level 299); members of the realm's
# ``can_manage_all_groups`` may change any user-defined group (level 305), other users only
# groups they are a direct member of (hubbub's stand-in for Zulip 10.2's per-group
# ``can_manage_group``, whose default is the group's creator). System groups change only
# with roles ("Insufficient permission").
# Every change is one event per kind of change, to every active user of the realm.

MAX_USER_GROUP_NAME_LENGTH = 100
INVALID_NAME_PREFIXES = ("@", "role:", "user:", "stream:", "channel:")
# can_mention_group (feature level 191): a system group, but not these.
_FORBIDDEN_MENTION_GROUPS = ("role:internet", "role:owners")


def check_member_or_admin(user: User) -> None:
    """Zulip's require_member_or_admin: guests and bots cannot use the group endpoints."""
    if user.is_guest:
        raise JsonableError("Not allowed for guest users")
    if user.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")


def check_user_group_edit_permission(user: User, realm: Realm) -> None:
    """Before changing a group; which groups the user may change ``access_group_for_edit``
    decides."""
    check_member_or_admin(user)


async def check_user_group_create_permission(
    conn: AsyncConnection, user: User, realm: Realm
) -> None:
    check_member_or_admin(user)
    if not await user_has_permission(conn, user, realm, "can_create_groups"):
        raise JsonableError("Insufficient permission")


def check_user_group_name(name: str) -> str:
    if len(name) > MAX_USER_GROUP_NAME_LENGTH:
        raise JsonableError(
            f"User group name cannot exceed {MAX_USER_GROUP_NAME_LENGTH} characters."
        )
    for prefix in INVALID_NAME_PREFIXES:
        if name.startswith(prefix):
            raise JsonableError(f"User group name cannot start with '{prefix}'.")
    return name


async def _check_name_free(conn: AsyncConnection, realm_id: int, name: str) -> None:
    if await get_group_by_name(conn, realm_id, name) is not None:
        raise JsonableError(f"User group '{name}' already exists.")


async def access_group_for_edit(conn: AsyncConnection, user: User, group_id: int) -> sa.Row[Any]:
    group = await access_group_by_id(conn, user.realm_id, group_id)
    if group.is_system_group:
        raise JsonableError("Insufficient permission")
    realm = await get_realm_by_id(conn, user.realm_id)
    assert realm is not None
    if await user_has_permission(conn, user, realm, "can_manage_all_groups"):
        return group
    if not await is_direct_member(conn, user.id, group.id):
        raise JsonableError("Insufficient permission")
    return group


async def access_group_for_mention_setting(
    conn: AsyncConnection, realm_id: int, group_id: int
) -> int:
    group = await access_group_by_id(conn, realm_id, group_id)
    if not group.is_system_group:
        raise JsonableError("'can_mention_group' must be a system user group.")
    if group.name in _FORBIDDEN_MENTION_GROUPS:
        raise JsonableError(f"'can_mention_group' setting cannot be set to '{group.name}' group.")
    return int(group.id)


async def access_users_by_ids(
    conn: AsyncConnection, realm_id: int, user_ids: list[int], *, allow_deactivated: bool
) -> list[int]:
    """Zulip's user_ids_to_users: every id must be a user of this realm."""
    found: list[int] = []
    for user_id in user_ids:
        target = await get_user_by_id(conn, realm_id, user_id)
        if target is None:
            raise JsonableError(f"Invalid user ID: {user_id}")
        if not target.is_active and not allow_deactivated:
            raise JsonableError(f"User {user_id} is deactivated")
        if user_id not in found:
            found.append(user_id)
    return found


async def _notify_all(tx: Tx, realm_id: int, event: dict[str, Any]) -> None:
    recipients = await active_user_ids(tx.conn, realm_id)
    tx.notify(realm_id, event, recipients)


async def check_create_user_group(
    tx: Tx,
    acting: User,
    realm: Realm,
    *,
    name: str,
    description: str,
    members: list[int],
    can_mention_group_id: int | None,
) -> int:
    await check_user_group_create_permission(tx.conn, acting, realm)
    member_ids = await access_users_by_ids(tx.conn, realm.id, members, allow_deactivated=False)
    check_user_group_name(name)
    if can_mention_group_id is not None:
        mention_id = await access_group_for_mention_setting(tx.conn, realm.id, can_mention_group_id)
    else:
        # Zulip's default for user-defined groups: anyone may mention them.
        mention_id = await get_group_id_by_name(tx.conn, realm.id, "role:everyone")
    await _check_name_free(tx.conn, realm.id, name)
    result = await tx.conn.execute(
        sa.insert(user_group).values(
            realm_id=realm.id,
            name=name,
            description=description,
            is_system_group=False,
            can_mention_group_id=mention_id,
        )
    )
    group_id = int(result.inserted_primary_key[0])  # type: ignore[index]
    if member_ids:
        await tx.conn.execute(
            sa.insert(user_group_membership),
            [{"user_group_id": group_id, "user_profile_id": u} for u in member_ids],
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
    can_mention_group_id: int | None,
) -> None:
    check_user_group_edit_permission(acting, realm)
    if name is None and description is None and can_mention_group_id is None:
        raise JsonableError("No new data supplied")
    group = await access_group_for_edit(tx.conn, acting, group_id)
    data: dict[str, Any] = {}
    if name is not None and name != group.name:
        check_user_group_name(name)
        await _check_name_free(tx.conn, realm.id, name)
        data["name"] = name
    if description is not None and description != group.description:
        data["description"] = description
    if can_mention_group_id is not None and can_mention_group_id != group.can_mention_group_id:
        data["can_mention_group"] = await access_group_for_mention_setting(
            tx.conn, realm.id, can_mention_group_id
        )
    if not data:
        return
    columns = {
        ("can_mention_group_id" if k == "can_mention_group" else k): v for k, v in data.items()
    }
    await tx.conn.execute(
        sa.update(user_group).where(user_group.c.id == group.id).values(**columns)
    )
    # Zulip sends one event per changed property.
    for key, value in data.items():
        await _notify_all(
            tx,
            realm.id,
            {"type": "user_group", "op": "update", "group_id": group.id, "data": {key: value}},
        )


async def check_delete_user_group(tx: Tx, acting: User, realm: Realm, group_id: int) -> None:
    check_user_group_edit_permission(acting, realm)
    group = await access_group_for_edit(tx.conn, acting, group_id)
    current = await get_realm_by_id(tx.conn, realm.id)
    assert current is not None
    if settings_using_group(current, group.id):
        # An organization permission names it (its id, or a subgroup of its anonymous
        # group): deleting it would leave the setting naming no group.
        raise JsonableError("Cannot deactivate user group in use.")
    # Groups that contain this one lose it as a subgroup; tell clients so before the group
    # goes (Zulip 8.0 drops those links silently, which leaves clients' lists stale).
    for supergroup_id in await get_supergroup_ids(tx.conn, group.id):
        await _notify_all(
            tx,
            realm.id,
            {
                "type": "user_group",
                "op": "remove_subgroups",
                "group_id": supergroup_id,
                "direct_subgroup_ids": [group.id],
            },
        )
    await tx.conn.execute(sa.delete(user_group).where(user_group.c.id == group.id))
    await _notify_all(tx, realm.id, {"type": "user_group", "op": "remove", "group_id": group.id})


async def check_update_group_members(
    tx: Tx, acting: User, realm: Realm, group_id: int, *, add: list[int], delete: list[int]
) -> None:
    """``POST /user_groups/{id}/members``: additions, then removals, all or nothing."""
    check_user_group_edit_permission(acting, realm)
    if not add and not delete:
        raise JsonableError('Nothing to do. Specify at least one of "add" or "delete".')
    if add:
        group = await access_group_for_edit(tx.conn, acting, group_id)
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
        group = await access_group_for_edit(tx.conn, acting, group_id)
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


async def _access_potential_subgroups(
    conn: AsyncConnection, realm_id: int, subgroup_ids: list[int]
) -> list[int]:
    found: list[int] = []
    for subgroup_id in subgroup_ids:
        if await get_group(conn, realm_id, subgroup_id) is None:
            raise JsonableError(f"Invalid user group ID: {subgroup_id}")
        if subgroup_id not in found:
            found.append(subgroup_id)
    return found


async def check_update_subgroups(
    tx: Tx, acting: User, realm: Realm, group_id: int, *, add: list[int], delete: list[int]
) -> None:
    """``POST /user_groups/{id}/subgroups``: any group of the realm (system groups too) may
    be a subgroup of a user-defined group, as long as no cycle results."""
    check_user_group_edit_permission(acting, realm)
    if not add and not delete:
        raise JsonableError('Nothing to do. Specify at least one of "add" or "delete".')
    if add:
        group = await access_group_for_edit(tx.conn, acting, group_id)
        to_add = await _access_potential_subgroups(tx.conn, realm.id, add)
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
        to_remove = await _access_potential_subgroups(tx.conn, realm.id, delete)
        group = await access_group_for_edit(tx.conn, acting, group_id)
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
