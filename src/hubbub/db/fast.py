"""Reads of statements built once, straight through the driver where SQLAlchemy adds
nothing but cost.

SQLAlchemy's async execution of a prepared select costs several times the CPU of the
driver's own ``fetch`` of the same SQL, more than many of these queries take in the
database. On PostgreSQL such a
statement goes to the asyncpg connection directly when the connection reads in autocommit
(``READ_EXECUTION_OPTIONS``) or in a READ COMMITTED transaction: a plain select there sees
what it would through SQLAlchemy (each statement takes its own snapshot, and the
transaction's own writes, which come after SQLAlchemy's ``BEGIN``, are on the same
connection). A select that locks rows (``FOR UPDATE``), or whose parameters SQLAlchemy
must convert, goes through SQLAlchemy. On SQLite the statement goes to the dialect's
connection in its open transaction, its parameters converted as SQLAlchemy would (a
float's ``to_float``: every presence ping's cutoff time had sent it through SQLAlchemy).
The SQL is compiled once per statement, so only module-level statements may be given.
A statement marked ``long_read`` runs, on SQLite, in the reader's thread, as it would
through SQLAlchemy.

Rows are read by position, or by name through ``named``; their columns must be ones
asyncpg returns as SQLAlchemy would (ints, floats, strings, booleans;
``tests/test_fast_reads.py`` compares them).
"""

from __future__ import annotations

import dataclasses
import sqlite3
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler

from hubbub.db.dialects import LONG_READ, sqlite_staged


class FastRow(tuple[Any, ...]):
    """A row read from SQLite by ``fetch_rows``: a tuple, with its statement's column
    names for ``named`` (each statement has its own subclass, ``_Compiled.row``)."""

    __slots__ = ()
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A statement's SQL for the driver: its parameters' names in order, the values the
    statement holds itself (literals such as ``type == 2``) and, on SQLite, how its rows
    are made (``row``), which columns SQLAlchemy converts (``convert``: index and
    function, such as a boolean's 0 or 1 to ``False`` or ``True``) and which parameters
    (``convert_params``, such as a float's ``to_float``)."""

    sql: str
    names: tuple[str, ...]
    held: dict[str, Any]
    row: type[FastRow]
    convert: tuple[tuple[int, Callable[[Any], Any]], ...]
    convert_params: tuple[tuple[int, Callable[[Any], Any]], ...]
    # Marked ``long_read``: on SQLite, a reader runs it in its connection's thread.
    long: bool

    def values(self, params: Mapping[str, Any] | None) -> list[Any]:
        given = params or {}
        values = [given[name] if name in given else self.held[name] for name in self.names]
        for index, function in self.convert_params:
            values[index] = function(values[index])
        return values

    def rows(self, found: list[tuple[Any, ...]]) -> list[FastRow]:
        make, convert = self.row, self.convert
        if not convert:
            return [make(values) for values in found]
        rows = []
        for values in found:
            row = list(values)
            for index, function in convert:
                row[index] = function(row[index])
            rows.append(make(row))
        return rows


# (Statement object id, dialect name) -> (the statement, its _Compiled, or None for one
# SQLAlchemy must execute); the statement is kept so that its id is never reused while
# the entry lives. (One process serves one database; the tests use both.)
_COMPILED: dict[tuple[int, str], tuple[sa.Select[Any], _Compiled | None]] = {}
# Far more than the modules' statements: a statement built per call, given by mistake,
# costs a compilation each time but cannot grow the cache without bound.
_COMPILED_MAX = 1_000
_PLAIN_READS = ("autocommit", "read_committed")


def _compiled(statement: sa.Select[Any], dialect: Dialect) -> _Compiled | None:
    key = (id(statement), dialect.name)
    entry = _COMPILED.get(key)
    if entry is None or entry[0] is not statement:
        compiled = statement.compile(dialect=dialect)
        # SQLite's parameters are converted as SQLAlchemy would (``_plan``); asyncpg's
        # only when SQLAlchemy has nothing to convert.
        plain = statement._for_update_arg is None and not any(
            bind.expanding or (dialect.name != "sqlite" and _converts(bind.type, dialect))
            for bind in compiled.binds.values()
        )
        options = statement.get_execution_options()
        long = bool(options.get(LONG_READ))
        plan = _plan(compiled, dialect, long) if plain else None
        table = options.get(sqlite_staged.TABLE_OPTION)
        if plan is not None and table:  # SQLite's user_message view's tables
            plan = _on_table(plan, table)
        entry = (statement, plan)
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        _COMPILED[key] = entry
    return entry[1]


def _plan(compiled: SQLCompiler, dialect: Dialect, long: bool) -> _Compiled:
    columns = compiled._result_columns or []
    positions = tuple(compiled.positiontup or ())
    convert: list[tuple[int, Callable[[Any], Any]]] = []
    convert_params: list[tuple[int, Callable[[Any], Any]]] = []
    # asyncpg takes and gives each value's Python type itself; SQLite's are converted by
    # SQLAlchemy's own functions, as it would.
    if dialect.name == "sqlite":
        results = (column.type._cached_result_processor(dialect, None) for column in columns)
        convert = [(i, f) for i, f in enumerate(results) if f is not None]
        binds = (compiled.binds[name].type._cached_bind_processor(dialect) for name in positions)
        convert_params = [(i, f) for i, f in enumerate(binds) if f is not None]
    names = tuple(str(column.keyname) for column in columns)
    row = type("FastRow", (FastRow,), {"__slots__": (), "names": names})
    return _Compiled(
        str(compiled),
        positions,
        dict(compiled.params),
        row,
        tuple(convert),
        tuple(convert_params),
        long,
    )


def _on_table(plan: _Compiled, table: str) -> _Compiled:
    """``plan`` over one table of SQLite's view or over both (``sqlite_staged.on_table``,
    whose SQL for both takes the parameters twice)."""
    sql = sqlite_staged.on_table(plan.sql, table)
    if table != sqlite_staged.BOTH_TABLES:
        return dataclasses.replace(plan, sql=sql)
    count = len(plan.names)
    return dataclasses.replace(
        plan,
        sql=sql,
        names=sqlite_staged.doubled(plan.names),
        convert_params=(
            *plan.convert_params,
            *((index + count, function) for index, function in plan.convert_params),
        ),
    )


def _converts(type_: Any, dialect: Dialect) -> bool:
    """Whether SQLAlchemy changes a parameter of this type before the driver sees it. An
    array's processor only applies its items' (``in_ids``' lists of ints have none)."""
    if isinstance(type_, ARRAY):
        return _converts(type_.item_type, dialect)
    return type_._cached_bind_processor(dialect) is not None


def _driver_connection(conn: AsyncConnection) -> Any | None:
    """The driver's connection of ``conn`` where statements may skip SQLAlchemy: asyncpg's
    when it reads in autocommit or READ COMMITTED; on SQLite, the dialect's connection
    (``dialects/sqlite.py``: ``fetch_all``), in whatever transaction ``conn`` has begun."""
    if conn.sync_connection is None:
        return None
    pooled = conn.sync_connection.connection
    if conn.dialect.name == "sqlite":
        driver = pooled.driver_connection
        return driver if hasattr(driver, "fetch_all") else None
    if conn.dialect.name != "postgresql":
        return None
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
    values = compiled.values(params)
    try:
        if conn.dialect.name == "sqlite":
            if compiled.long:
                return compiled.rows(await driver.fetch_all_long(compiled.sql, values))
            return compiled.rows(driver.fetch_all(compiled.sql, values))
        rows: Sequence[Sequence[Any]] = await driver.fetch(compiled.sql, *values)
    except Exception as exc:
        if not _is_driver_error(exc):
            raise
        # As SQLAlchemy would raise it: callers tell errors apart by its classes (an id
        # beyond a 32-bit column is a 400 in ``api/endpoint.py``, not a 500).
        raise sa.exc.DBAPIError.instance(compiled.sql, values, exc, Exception) from exc
    return rows


def _is_driver_error(exc: Exception) -> bool:
    """Whether a driver raised ``exc`` for a statement (SQLAlchemy's DBAPIError wraps
    those). asyncpg is looked up, not imported: it is loaded once PostgreSQL's driver is
    in use, and an embedded server, which never uses it, does not pay for its import."""
    if isinstance(exc, sqlite3.Error):
        return True
    asyncpg = sys.modules.get("asyncpg")
    return asyncpg is not None and isinstance(exc, asyncpg.PostgresError)


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
    if isinstance(row, FastRow):
        return dict(zip(row.names, row, strict=True))
    mapping: Mapping[Any, Any] = row
    return mapping
