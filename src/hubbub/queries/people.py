"""The realm's users and user groups kept per process, read again only when they change.

``/register`` reads every account of the realm (``realm_users``) and every group with its
members (``realm_user_groups``), a large part of its time on the event loop in a big
realm; ``GET /users`` and ``GET /user_groups`` the same (bench/results/caches.md, *The
realm's people kept*). A process keeps what it last read of a
realm with the realm's people version: the count in ``realm_people_version`` that
triggers raise at every change of the realm's ``user_profile``, ``user_group`` and group
membership rows (migrations 0017 and 0018). The version is read in the caller's
transaction, so what a caller gets is exactly that transaction's snapshot, whichever
worker or command wrote last: no write can forget to count, since the database counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from hubbub.db.fast import fetch_value
from hubbub.db.tables import realm_people_version
from hubbub.models import User
from hubbub.queries.cache import VersionedCache
from hubbub.queries.user_groups import get_user_group_dicts
from hubbub.queries.users import list_users

_VERSION = sa.select(realm_people_version.c.version).where(
    realm_people_version.c.realm_id == sa.bindparam("realm_id")
)


def people_version_of(realm_id: ColumnElement[int]) -> ColumnElement[int]:
    """The people version of the realm ``realm_id`` as a column of another statement,
    for ``users_by_id``'s ``version`` (0 for a realm without a row, as
    ``get_people_version``)."""
    return sa.func.coalesce(
        sa.select(realm_people_version.c.version)
        .where(realm_people_version.c.realm_id == realm_id)
        .scalar_subquery(),
        0,
    )


async def get_people_version(conn: AsyncConnection, realm_id: int) -> int:
    """The realm's people version in ``conn``'s snapshot (0: unchanged since 0017)."""
    return int(await fetch_value(conn, _VERSION, {"realm_id": realm_id}) or 0)


@dataclass(frozen=True)
class _Users:
    """A realm's users in id order, and by id."""

    in_order: tuple[User, ...]
    by_id: Mapping[int, User]


class PeopleCache:
    """Each realm's users and groups as this process last read them, with the version."""

    def __init__(self) -> None:
        # By realm id (a server holds few realms: no bound).
        self._users: VersionedCache[int, int, _Users] = VersionedCache()
        self._groups: VersionedCache[int, int, tuple[dict[str, Any], ...]] = VersionedCache()

    async def users(self, conn: AsyncConnection, realm_id: int) -> list[User]:
        """``list_users(conn, realm_id)``; the list is the caller's own."""
        return list((await self._kept_users(conn, realm_id)).in_order)

    async def users_by_id(
        self, conn: AsyncConnection, realm_id: int, *, version: int | None = None
    ) -> Mapping[int, User]:
        """The realm's users (active or not, bots included) by id, shared: the caller
        only reads it. A page of messages names its senders and direct-message members
        here instead of reading their rows. ``version``: the realm's people version, when
        the caller has read it in ``conn``'s snapshot (``people_version_of``)."""
        return (await self._kept_users(conn, realm_id, version)).by_id

    async def _kept_users(
        self, conn: AsyncConnection, realm_id: int, version: int | None = None
    ) -> _Users:
        if version is None:
            version = await get_people_version(conn, realm_id)
        return await self._users.get(realm_id, version, lambda: _users(conn, realm_id))

    async def groups(self, conn: AsyncConnection, realm_id: int) -> list[dict[str, Any]]:
        """``get_user_group_dicts(conn, realm_id)``; the list and each group's dict are the
        caller's own (``/register`` applies events to them), the member lists shared: no
        caller changes a list in place."""
        version = await get_people_version(conn, realm_id)
        kept = await self._groups.get(realm_id, version, lambda: _groups(conn, realm_id))
        return [dict(group) for group in kept]


async def _users(conn: AsyncConnection, realm_id: int) -> _Users:
    users = tuple(await list_users(conn, realm_id))
    return _Users(users, {user.id: user for user in users})


async def _groups(conn: AsyncConnection, realm_id: int) -> tuple[dict[str, Any], ...]:
    return tuple(await get_user_group_dicts(conn, realm_id))
