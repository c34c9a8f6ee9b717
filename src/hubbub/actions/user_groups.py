"""Zulip's system user groups ("role:members", ...), kept in step with user roles.

Each realm gets the eight system groups when it is created. A user is a *direct* member of
the groups of their role; the groups nest (owners ⊂ administrators ⊂ moderators ⊂
fullmembers ⊂ members ⊂ everyone ⊂ internet), so membership of a wider group follows
through subgroups. hubbub's waiting period is 0 days, so every member is a full member.
Stream permissions (``can_remove_subscribers_group``) name these groups.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import group_group_membership, user_group, user_group_membership
from hubbub.models import Role, User
from hubbub.queries.users import list_active_users
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
    recipients = [u.id for u in await list_active_users(tx.conn, user.realm_id)]
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
