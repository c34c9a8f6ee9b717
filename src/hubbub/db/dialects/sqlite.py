"""SQLite: one writer at a time, WAL, and the pragmas that make it safe and fast."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from typing import Any

import aiosqlite
import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

BUSY_TIMEOUT_MS = 10_000
# Writes are serialized in-process, so the pool only needs room for concurrent readers.
POOL_SIZE = 8

# A burst of requests (thousands of long-polls re-arming at once) queues for a connection;
# waiting is better than answering 500 after SQLAlchemy's default 30 s.
POOL_TIMEOUT_SECONDS = 300
ENGINE_KWARGS: dict[str, Any] = {
    "pool_size": POOL_SIZE,
    "max_overflow": 4,
    "pool_timeout": POOL_TIMEOUT_SECONDS,
}
SERIALIZE_WRITES = True


def install(engine: AsyncEngine) -> None:
    """Set the pragmas on every new connection and take control of transaction begin.

    pysqlite's own implicit BEGIN is turned off so that write transactions can start with
    BEGIN IMMEDIATE: a deferred transaction that later writes can fail with SQLITE_BUSY when
    another process (say ``hubbub create-user``) wrote meanwhile, and busy_timeout cannot help.
    """
    sync_engine = engine.sync_engine

    @sa.event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.close()

    @sa.event.listens_for(sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("hubbub_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


class _InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection that runs a write transaction's statements in the calling
    (event-loop) thread.

    aiosqlite hands every call to its own thread and resumes the caller through the event
    loop: one loop turn per statement. A send is about twenty statements, and under load
    each turn waits behind every other ready request, while the single writer is held:
    at 500 active users writes queued for a second. Run inline, a transaction's statements
    hold the loop for their own time only (well under a millisecond each). What may wait
    on another process stays in the thread: BEGIN (a writer elsewhere: busy_timeout) and
    COMMIT/ROLLBACK (a WAL checkpoint), as do connecting and closing.
    """

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if _may_wait(fn, args):
            return await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)


def _may_wait(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    name = getattr(fn, "__name__", "")
    if name in ("commit", "rollback", "close"):
        return True
    return bool(args) and isinstance(args[0], str) and args[0].lstrip()[:5].upper() == "BEGIN"


def create_write_engine(url: str) -> AsyncEngine | None:
    """The engine of write transactions (one connection: writes are serialized), whose
    statements run inline (``_InlineConnection``); None for an in-memory database, which
    a second engine would not share."""
    path = make_url(url).database
    if path in (None, "", ":memory:"):
        return None

    async def connect() -> aiosqlite.Connection:
        # Used from the loop's thread and from aiosqlite's, never from both at once.
        connector = partial(sqlite3.connect, path, check_same_thread=False)
        connection = _InlineConnection(connector, iter_chunk_size=64)
        connection._thread.daemon = True
        return await connection

    engine = create_async_engine(
        url,
        pool_size=1,
        max_overflow=0,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        async_creator=connect,
    )
    install(engine)
    return engine


def insert(table: sa.Table) -> Any:
    return sqlite_insert(table)


# Rows ANALYZE reads per index: bounded, so a multi-gigabyte database is analyzed in well
# under a second (0.17 s for 1,000,000 messages and 33,000,000 user_message rows).
ANALYSIS_LIMIT = 10_000


async def refresh_statistics(conn: AsyncConnection) -> None:
    """Give the query planner row-count statistics (``sqlite_stat1``). SQLite never
    gathers them by itself, and without them it guesses, for example scanning a million
    messages newest-first for a direct-message narrow instead of using the sender index
    (300 ms instead of 3)."""
    await conn.exec_driver_sql(f"PRAGMA analysis_limit={ANALYSIS_LIMIT}")
    await conn.exec_driver_sql("ANALYZE")
