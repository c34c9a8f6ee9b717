"""``db.fast.fetch_rows``: statements built once, read through asyncpg directly outside
transactions on PostgreSQL, give the rows SQLAlchemy gives; inside a transaction (and on
SQLite) SQLAlchemy executes them, so they see the transaction's own writes."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from hubbub.db import fast
from hubbub.db.tables import user_presence
from hubbub.queries.presence import _REALM_PRESENCES
from hubbub.queries.users import _LOGIN_CANDIDATES, get_login_candidates
from tests.helpers import TestEnv


async def test_rows_match_sqlalchemys(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(user_presence).values(
                user_profile_id=hamlet.id,
                realm_id=hamlet.realm_id,
                last_active_time=None,
                last_connected_time=1_700_000_000.5,
            )
        )
    cases = [
        (_LOGIN_CANDIDATES, {"login": hamlet.email}),
        (_REALM_PRESENCES, {"realm_id": hamlet.realm_id, "since": 0.0}),
    ]
    async with env.services.db.read() as conn:
        for statement, params in cases:
            expected = [tuple(row) for row in await conn.execute(statement, params)]
            rows = [tuple(row) for row in await fast.fetch_rows(conn, statement, params)]
            assert rows == expected
            assert rows and all(
                type(a) is type(b)
                for row, other in zip(rows, expected, strict=True)
                for a, b in zip(row, other, strict=True)
            )
        # The driver's own path on PostgreSQL, SQLAlchemy's on SQLite.
        on_postgresql = env.services.db.dialect_name == "postgresql"
        assert (fast._driver_connection(conn) is not None) == on_postgresql
        [(user, realm)] = await get_login_candidates(conn, hamlet.email.upper())
    assert (user, realm.id) == (hamlet, hamlet.realm_id)


async def test_a_transaction_reads_its_own_writes(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    async with env.services.db.write() as conn:
        assert fast._driver_connection(conn) is None
        await conn.execute(
            sa.text("UPDATE user_profile SET full_name = 'Prince' WHERE id = :id"),
            {"id": hamlet.id},
        )
        [(user, _realm)] = await get_login_candidates(conn, hamlet.email)
        assert user.full_name == "Prince"


def test_parameters_needing_conversion_are_refused() -> None:
    statement = sa.select(user_presence.c.user_profile_id).where(
        user_presence.c.user_profile_id.in_(sa.bindparam("ids", expanding=True))
    )
    with pytest.raises(TypeError):
        fast._compiled(statement, postgresql.asyncpg.dialect())
