"""User groups: Zulip's system groups ("role:members", ...), kept in step with user roles,
and the user-defined groups of ``/user_groups`` (below).

Each realm gets the eight system groups when it is created. A user is a *direct* member of
the groups of their role; the groups nest (owners ⊂ administrators ⊂ moderators ⊂
fullmembers ⊂ members ⊂ everyone ⊂ internet), so membership of a wider group follows
through subgroups. The rows make every member a full member; permission checks follow the
realm's waiting period instead (``queries/group_settings.py``).
Stream permissions (``can_remove_subscribers_group``) name these groups. The actions of
``/user_groups`` are in ``actions/user_group_edit.py``, who may take them in
``actions/user_group_permissions.py``.
"""

from __future__ import annotations

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.errors import JsonableError
from hubbub.models import Role, User
from hubbub.queries.users import active_user_ids, get_user_by_id
from hubbub.realm_group_settings import GROUP_PERMISSION_SETTINGS
from hubbub.text_checks import check_printable
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
    # Every setting of a system group is its default_for_system_groups (all nobody).
    settings = {
        name: ids[config.default_for_system_groups or "role:nobody"]
        for name, config in GROUP_PERMISSION_SETTINGS.items()
    }
    await conn.execute(
        sa.update(user_group)
        .where(user_group.c.id.in_(ids.values()))
        .values(settings=orjson.dumps(settings, option=orjson.OPT_SORT_KEYS).decode())
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
# Checks shared by the ``/user_groups`` actions (``actions/user_group_edit.py``).

MAX_USER_GROUP_NAME_LENGTH = 100
INVALID_NAME_PREFIXES = ("@", "role:", "user:", "stream:", "channel:")


def check_member_or_admin(user: User) -> None:
    """Zulip's require_member_or_admin: guests and bots cannot use the group endpoints."""
    if user.is_guest:
        raise JsonableError("Not allowed for guest users")
    if user.is_bot:
        raise JsonableError("This endpoint does not accept bot requests.")


def check_user_group_name(name: str) -> str:
    if name.strip() == "":
        raise JsonableError("User group name can't be empty!")
    if len(name) > MAX_USER_GROUP_NAME_LENGTH:
        raise JsonableError(
            f"User group name cannot exceed {MAX_USER_GROUP_NAME_LENGTH} characters."
        )
    for prefix in INVALID_NAME_PREFIXES:
        if name.startswith(prefix):
            raise JsonableError(f"User group name cannot start with '{prefix}'.")
    # Mentions and lists show the name as it is: an escape sequence would reach screens.
    check_printable(name, "user group name")
    return name


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
