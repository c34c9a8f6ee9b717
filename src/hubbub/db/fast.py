"""Reads of statements built once, straight through the driver where SQLAlchemy adds
nothing but cost.

SQLAlchemy's async execution of a prepared select costs ~200 µs of CPU, against ~65-85 µs
for asyncpg's own ``fetch`` of the same SQL (the login lookup in a loop, uvloop; for the
1,000 rows of a realm's presence 1.0-1.1 ms against 0.5-0.7 ms). On PostgreSQL such a
statement goes to the asyncpg connection directly when the connection reads in autocommit
(``READ_EXECUTION_OPTIONS``) or in a READ COMMITTED transaction: a plain select there sees
what it would through SQLAlchemy (each statement takes its own snapshot, and the
transaction's own writes, which come after SQLAlchemy's ``BEGIN``, are on the same
connection). A select that locks rows (``FOR UPDATE``), or whose parameters SQLAlchemy
must convert, goes through SQLAlchemy, as does everything on SQLite. The SQL is compiled
once per statement, so only module-level statements may be given.

Rows are read by position, or by name through ``named``; their columns must be ones
asyncpg returns as SQLAlchemy would (ints, floats, strings, booleans;
``tests/test_fast_reads.py`` compares them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

# Statement object id -> (the statement, its SQL, its parameters' names in order and the
# values the statement holds itself (literals such as ``type == 2``), or None for one
# SQLAlchemy must execute); the statement is kept so that its id is never reused while
# the entry lives.
_Compiled = tuple[str, tuple[str, ...], dict[str, Any]]
_COMPILED: dict[int, tuple[sa.Select[Any], _Compiled | None]] = {}
# Far more than the module's statements: a statement built per call, given by mistake,
# costs a compilation each time but cannot grow the cache without bound.
_COMPILED_MAX = 1_000
_PLAIN_READS = ("autocommit", "read_committed")


def _compiled(statement: sa.Select[Any], dialect: Dialect) -> _Compiled | None:
    entry = _COMPILED.get(id(statement))
    if entry is None or entry[0] is not statement:
        compiled = statement.compile(dialect=dialect)
        plain = statement._for_update_arg is None and not any(
            bind.expanding or _converts(bind.type, dialect) for bind in compiled.binds.values()
        )
        names = tuple(compiled.positiontup or ())
        sql = (str(compiled), names, dict(compiled.params)) if plain else None
        entry = (statement, sql)
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        _COMPILED[id(statement)] = entry
    return entry[1]


def _converts(type_: Any, dialect: Dialect) -> bool:
    """Whether SQLAlchemy changes a parameter of this type before the driver sees it. An
    array's processor only applies its items' (``in_ids``' lists of ints have none)."""
    if isinstance(type_, ARRAY):
        return _converts(type_.item_type, dialect)
    return type_._cached_bind_processor(dialect) is not None


def _driver_connection(conn: AsyncConnection) -> Any | None:
    """The asyncpg connection of ``conn`` when it reads in autocommit or READ COMMITTED."""
    if conn.dialect.name != "postgresql" or conn.sync_connection is None:
        return None
    pooled = conn.sync_connection.connection
    if getattr(pooled.dbapi_connection, "isolation_level", None) not in _PLAIN_READS:
        return None
    return pooled.driver_connection


async def fetch_rows(
    conn: AsyncConnection, statement: sa.Select[Any], params: Mapping[str, Any] | None = None
) -> Sequence[Sequence[Any]]:
    """The rows of ``statement`` (a module-level constant), to be read by position."""
    driver = _driver_connection(conn)
    compiled = _compiled(statement, conn.dialect) if driver is not None else None
    if driver is None or compiled is None:
        found: Sequence[Sequence[Any]] = (await conn.execute(statement, dict(params or {}))).all()
        return found
    sql, names, held = compiled
    given = params or {}
    values = [given[name] if name in given else held[name] for name in names]
    rows: Sequence[Sequence[Any]] = await driver.fetch(sql, *values)
    return rows


async def fetch_value(
    conn: AsyncConnection, statement: sa.Select[Any], params: Mapping[str, Any] | None = None
) -> Any:
    """The first column of the first row, or None without rows."""
    rows = await fetch_rows(conn, statement, params)
    return rows[0][0] if rows else None


def named(row: Any) -> Mapping[Any, Any]:
    """A row of ``fetch_rows`` by column name (asyncpg's rows are mappings already)."""
    if isinstance(row, sa.Row):
        return row._mapping
    mapping: Mapping[Any, Any] = row
    return mapping
