"""``db.fast.fetch_rows``: statements built once, read through asyncpg directly outside
transactions on PostgreSQL, give the rows SQLAlchemy gives; inside a transaction (and on
SQLite) SQLAlchemy executes them, so they see the transaction's own writes."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from hubbub.db import fast
from hubbub.db.dialects import ids_argument
from hubbub.db.tables import user_presence
from hubbub.queries.message_dicts import _MESSAGES, _USERS
from hubbub.queries.presence import _REALM_PRESENCES
from hubbub.queries.reactions import _REACTIONS
from hubbub.queries.streams import _SEND_STREAM_BY_NAME, _SUBSCRIBERS, get_stream_by_name
from hubbub.queries.users import _LOGIN_CANDIDATES, get_login_candidates
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_stream_message


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
    await env.subscribe("hamlet", "Verona")
    sent = await send_stream_message(env, "hamlet", "Verona", "**hello**")
    reaction = {"emoji_name": "smile"}
    assert_success(await env.client("hamlet").post(f"/messages/{sent}/reactions", reaction))
    async with env.services.db.read() as conn:
        verona = await get_stream_by_name(conn, hamlet.realm_id, "verona")
        assert verona is not None
        cases = [
            (_LOGIN_CANDIDATES, {"login": hamlet.email}),
            (_REALM_PRESENCES, {"realm_id": hamlet.realm_id, "since": 0.0}),
            # A literal of its own (the recipient type), and an array of ids.
            (_SEND_STREAM_BY_NAME, {"realm_id": hamlet.realm_id, "name": "verona"}),
            (_SUBSCRIBERS(conn), {"ids": ids_argument(conn, [verona.id])}),
            # A page of messages' objects.
            (_MESSAGES(conn), {"ids": ids_argument(conn, [sent]), "realm_id": hamlet.realm_id}),
            (_USERS(conn), {"ids": ids_argument(conn, [hamlet.id])}),
            (_REACTIONS(conn), {"ids": ids_argument(conn, [sent])}),
        ]
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
    """In a write transaction (READ COMMITTED on PostgreSQL) the driver's path is taken
    too: before SQLAlchemy's lazy BEGIN a plain select sees what it would inside, and
    after it the transaction's own writes, on the same connection."""
    hamlet = env.users["hamlet"]
    async with env.services.db.write() as conn:
        on_postgresql = env.services.db.dialect_name == "postgresql"
        assert (fast._driver_connection(conn) is not None) == on_postgresql
        [(user, _realm)] = await get_login_candidates(conn, hamlet.email)
        assert user.full_name == hamlet.full_name
        await conn.execute(
            sa.text("UPDATE user_profile SET full_name = 'Prince' WHERE id = :id"),
            {"id": hamlet.id},
        )
        [(user, _realm)] = await get_login_candidates(conn, hamlet.email)
        assert user.full_name == "Prince"


def test_conversions_and_locks_are_left_to_sqlalchemy() -> None:
    dialect = postgresql.asyncpg.dialect()
    expanding = sa.select(user_presence.c.user_profile_id).where(
        user_presence.c.user_profile_id.in_(sa.bindparam("ids", expanding=True))
    )
    locking = sa.select(user_presence).where(user_presence.c.user_profile_id == 1)
    assert fast._compiled(expanding, dialect) is None
    assert fast._compiled(locking.with_for_update(), dialect) is None
    assert fast._compiled(locking, dialect) is not None
