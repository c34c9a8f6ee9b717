"""Reading realms (organizations)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import realm as realm_table
from hubbub.errors import JsonableError
from hubbub.models import Realm


async def get_realm_by_subdomain(conn: AsyncConnection, subdomain: str) -> Realm | None:
    row = (
        await conn.execute(sa.select(realm_table).where(realm_table.c.string_id == subdomain))
    ).first()
    return None if row is None else Realm.from_row(row)


async def get_realm_by_id(conn: AsyncConnection, realm_id: int) -> Realm | None:
    row = (await conn.execute(sa.select(realm_table).where(realm_table.c.id == realm_id))).first()
    return None if row is None else Realm.from_row(row)


async def access_realm_by_subdomain(conn: AsyncConnection, subdomain: str) -> Realm:
    realm = await get_realm_by_subdomain(conn, subdomain)
    if realm is None:
        raise JsonableError(f"There is no organization with the subdomain {subdomain!r}")
    return realm


async def count_realms(conn: AsyncConnection) -> int:
    return int(
        (await conn.execute(sa.select(sa.func.count()).select_from(realm_table))).scalar_one()
    )


async def list_active_realms(conn: AsyncConnection) -> list[Realm]:
    rows = await conn.execute(
        sa.select(realm_table).where(~realm_table.c.deactivated).order_by(realm_table.c.id)
    )
    return [Realm.from_row(row) for row in rows]
