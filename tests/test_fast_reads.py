"""``db.fast.fetch_rows``: statements built once, read through the driver directly (asyncpg
in autocommit or READ COMMITTED, SQLite's connection in its open transaction), give the
rows SQLAlchemy gives, and see what SQLAlchemy's statements would: a transaction's own
writes, and on SQLite a read transaction's one snapshot."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import make_url

from hubbub.db import fast
from hubbub.db.dialects import ids_argument, sqlite_staged
from hubbub.db.tables import stream, user_message, user_presence
from hubbub.queries.message_dicts import _MESSAGES, _USERS
from hubbub.queries.presence import _REALM_PRESENCES
from hubbub.queries.reactions import _REACTIONS
from hubbub.queries.streams import _SEND_STREAM_BY_NAME, _SUBSCRIBERS, get_stream_by_name
from hubbub.queries.users import _LOGIN_CANDIDATES, get_login_candidates
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_stream_message


def _asyncpg_dialect() -> sa.Dialect:
    """asyncpg's dialect, to compile for PostgreSQL with no server."""
    return make_url("postgresql+asyncpg://").get_dialect()()


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
        cases: list[tuple[sa.Select[Any], dict[str, Any]]] = [
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
            found = (await conn.execute(statement, params)).all()
            fast_rows = await fast.fetch_rows(conn, statement, params)
            # By name too (labels such as the stream's recipient_id included).
            assert [dict(fast.named(row)) for row in fast_rows] == [
                dict(row._mapping) for row in found
            ]
            expected = [tuple(row) for row in found]
            rows = [tuple(row) for row in fast_rows]
            assert rows == expected
            assert rows and all(
                type(a) is type(b)
                for row, other in zip(rows, expected, strict=True)
                for a, b in zip(row, other, strict=True)
            )
        assert fast._driver_connection(conn) is not None  # the driver's own path
        # Every case took it (the presence cutoff, a float, is converted on SQLite).
        assert all(fast._compiled(statement, conn.dialect) for statement, _ in cases)
        [(user, realm)] = await get_login_candidates(conn, hamlet.email.upper())
    assert (user, realm.id) == (hamlet, hamlet.realm_id)


async def test_a_transaction_reads_its_own_writes(env: TestEnv) -> None:
    """In a write transaction (READ COMMITTED on PostgreSQL) the driver's path is taken
    too: before SQLAlchemy's lazy BEGIN a plain select sees what it would inside, and
    after it the transaction's own writes, on the same connection."""
    hamlet = env.users["hamlet"]
    async with env.services.db.write() as conn:
        assert fast._driver_connection(conn) is not None
        [(user, _realm)] = await get_login_candidates(conn, hamlet.email)
        assert user.full_name == hamlet.full_name
        await conn.execute(
            sa.text("UPDATE user_profile SET full_name = 'Prince' WHERE id = :id"),
            {"id": hamlet.id},
        )
        [(user, _realm)] = await get_login_candidates(conn, hamlet.email)
        assert user.full_name == "Prince"


def test_conversions_and_locks_are_left_to_sqlalchemy() -> None:
    dialect = _asyncpg_dialect()
    expanding = sa.select(user_presence.c.user_profile_id).where(
        user_presence.c.user_profile_id.in_(sa.bindparam("ids", expanding=True))
    )
    locking = sa.select(user_presence).where(user_presence.c.user_profile_id == 1)
    assert fast._compiled(expanding, dialect) is None
    assert fast._compiled(locking.with_for_update(), dialect) is None
    assert fast._compiled(locking, dialect) is not None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_sqlite_read_keeps_its_snapshot(env: TestEnv) -> None:
    """On SQLite a read transaction is one snapshot (``Database.read``); the driver's
    path runs in it, so a write committed meanwhile is not seen until the next read."""
    hamlet = env.users["hamlet"]
    async with env.services.db.read() as conn:
        [(before, _realm)] = await get_login_candidates(conn, hamlet.email)
        async with env.services.db.write() as writer:
            await writer.execute(
                sa.text("UPDATE user_profile SET full_name = 'Prince' WHERE id = :id"),
                {"id": hamlet.id},
            )
        [(during, _realm)] = await get_login_candidates(conn, hamlet.email)
    async with env.services.db.read() as conn:
        [(after, _realm)] = await get_login_candidates(conn, hamlet.email)
    assert (before.full_name, during.full_name) == (hamlet.full_name, hamlet.full_name)
    assert after.full_name == "Prince"


def test_sqlite_rows_are_converted_as_sqlalchemy_would() -> None:
    """SQLite stores booleans as 0 and 1; SQLAlchemy gives False and True, and so must the
    driver's path (the columns it converts are found once per statement)."""
    dialect = sqlite.dialect()
    statement = sa.select(user_presence.c.user_profile_id, stream.c.invite_only).where(
        user_presence.c.user_profile_id == sa.bindparam("id")
    )
    compiled = fast._compiled(statement, dialect)
    assert compiled is not None and "?" in compiled.sql
    # Compiled for each database a process (the tests) uses.
    on_postgresql = fast._compiled(statement, _asyncpg_dialect())
    assert on_postgresql is not None and "$1" in on_postgresql.sql and not on_postgresql.convert
    [row] = compiled.rows([(7, 1)])
    assert row == (7, True) and type(row[1]) is bool
    assert dict(fast.named(row)) == {"user_profile_id": 7, "invite_only": True}


def test_sqlite_parameters_are_converted_as_sqlalchemy_would() -> None:
    """SQLAlchemy passes a float parameter through ``to_float`` on SQLite (a Decimal
    becomes a float); the driver's path does the same, once per value."""
    statement = sa.select(user_presence.c.user_profile_id).where(
        user_presence.c.last_connected_time >= sa.bindparam("since"),
        user_presence.c.realm_id == sa.bindparam("realm_id"),
    )
    compiled = fast._compiled(statement, sqlite.dialect())
    assert compiled is not None
    values = compiled.values({"since": Decimal("1.5"), "realm_id": 2})
    assert values == [1.5, 2] and type(values[0]) is float
    assert compiled.values({"since": None, "realm_id": 2}) == [None, 2]


def test_a_statement_over_both_staged_tables_converts_both_copies_of_its_parameters() -> None:
    """Over SQLite's two ``user_message`` tables at once (``over_user_message``), the SQL
    holds the statement twice and takes its parameters twice: each copy converted as
    SQLAlchemy would, in its own place."""
    statement = sa.select(user_message.c.message_id).where(
        user_message.c.user_profile_id == sa.bindparam("user_id"),
        user_message.c.message_id > sa.bindparam("above", type_=sa.Float),
    )
    compiled = fast._compiled(sqlite_staged.over_tables(statement), sqlite.dialect())
    assert compiled is not None
    assert compiled.sql.count("?") == 4 and " UNION ALL " in compiled.sql
    values = compiled.values({"user_id": 5, "above": Decimal("1.5")})
    assert values == [5, 1.5, 5, 1.5] and all(type(v) is float for v in values[1::2])


_MISSING = sa.select(sa.table("no_such_table", sa.column("x")))


async def test_driver_errors_are_sqlalchemys(env: TestEnv) -> None:
    """Errors from the driver's path are SQLAlchemy's ``DBAPIError``, as through
    SQLAlchemy (on SQLite of the same subclass; asyncpg's own classes name no DB-API
    class, and no caller tells a read's errors apart but by their message)."""
    async with env.services.db.read() as conn:
        with pytest.raises(sa.exc.DBAPIError) as raised:
            await fast.fetch_rows(conn, _MISSING)
    assert "no_such_table" in str(raised.value)
    if env.services.db.is_sqlite:
        assert isinstance(raised.value, sa.exc.OperationalError)
