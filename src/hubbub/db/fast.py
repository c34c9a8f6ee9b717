"""Reads of statements built once, straight through the driver where SQLAlchemy adds
nothing but cost.

SQLAlchemy's async execution of a prepared select costs ~200 µs of CPU, against ~65-85 µs
for asyncpg's own ``fetch`` of the same SQL (the login lookup in a loop, uvloop; for the
1,000 rows of a realm's presence 1.0-1.1 ms against 0.5-0.7 ms). PostgreSQL reads run in
autocommit (``READ_EXECUTION_OPTIONS``): there is no transaction for SQLAlchemy to keep,
so such a statement can go to the asyncpg connection directly. Its SQL is compiled once.
Inside a transaction, and on SQLite, SQLAlchemy executes it as usual.

Only for statements whose parameters need no conversion by SQLAlchemy (checked when
compiled) and whose columns asyncpg returns as SQLAlchemy would (ints, floats, strings,
booleans; ``tests/test_fast_reads.py`` compares them). Rows are read by position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection

# Statement object id -> (the statement, its SQL, its parameters' names in order); the
# statement is kept so that its id is never reused while the entry lives.
_COMPILED: dict[int, tuple[sa.Select[Any], str, tuple[str, ...]]] = {}


def _compiled(statement: sa.Select[Any], dialect: Dialect) -> tuple[str, tuple[str, ...]]:
    entry = _COMPILED.get(id(statement))
    if entry is None or entry[0] is not statement:
        compiled = statement.compile(dialect=dialect)
        for name, bind in compiled.binds.items():
            if bind.expanding or bind.type._cached_bind_processor(dialect) is not None:
                raise TypeError(f"parameter {name} needs SQLAlchemy's conversion")
        entry = (statement, str(compiled), tuple(compiled.positiontup or ()))
        _COMPILED[id(statement)] = entry
    return entry[1], entry[2]


def _driver_connection(conn: AsyncConnection) -> Any | None:
    """The asyncpg connection of ``conn`` when it is outside any transaction."""
    if conn.dialect.name != "postgresql":
        return None
    pooled = conn.sync_connection.connection if conn.sync_connection is not None else None
    adapted = pooled.dbapi_connection if pooled is not None else None
    if adapted is None or not adapted.autocommit:
        return None
    return pooled.driver_connection if pooled is not None else None


async def fetch_rows(
    conn: AsyncConnection, statement: sa.Select[Any], params: Mapping[str, Any] | None = None
) -> Sequence[Sequence[Any]]:
    """The rows of ``statement`` (a module-level constant), to be read by position."""
    driver = _driver_connection(conn)
    if driver is None:
        result = await conn.execute(statement, dict(params or {}))
        return list(result.all())
    sql, names = _compiled(statement, conn.dialect)
    values = [params[name] for name in names] if params else []
    rows: Sequence[Sequence[Any]] = await driver.fetch(sql, *values)
    return rows
