"""SQLite: one writer at a time, WAL, and the pragmas that make it safe and fast."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sqlite3
from collections import deque
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any

import aiosqlite
import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.util import await_only

from hubbub.db.dialects import LONG_READ
from hubbub.db.dialects.sqlite_staged import (
    BOTH_TABLES,
    INSERT_STAGED,
    SETTLE_INTERVAL_SECONDS,
    TABLE_OPTION,
    USER_MESSAGE_SETTLED,
    USER_MESSAGE_TABLES,
    doubled,
    has_staged_rows,
    hold_off_settling,
    on_table,
    over_tables,
    pin_staged_statistics,
    settle_messages,
    settle_staged,
)
from hubbub.db.tables import stored_tables
from hubbub.db.writer_lock import WriterLock

logger = logging.getLogger("hubbub.db")

__all__ = [
    "SETTLE_INTERVAL_SECONDS",
    "USER_MESSAGE_SETTLED",
    "USER_MESSAGE_TABLES",
    "has_staged_rows",
    "hold_off_settling",
    "over_tables",
    "settle_messages",
    "settle_staged",
]

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
# A read transaction is one snapshot: it keeps its BEGIN and COMMIT.
READ_EXECUTION_OPTIONS: dict[str, Any] = {}

# WAL checkpoints. A send to a big stream dirties one page of each recipient's end of the
# user-major user_message, as many pages as SQLite's default automatic checkpoint allows:
# every such commit would then copy its pages back into the database and sync it before
# returning, most of the send's time. A server instead checkpoints from a background job
# every ``CHECKPOINT_INTERVAL_SECONDS``, off the commit path and once for pages that many
# sends dirtied again.
#
# SQLite starts the WAL over (writes from its beginning again) only at a write
# transaction that finds all of it copied. The job's checkpoints never leave it so while
# sends commit during their copying, so once the WAL holds CHECKPOINT_RESTART_FRAMES the
# job checkpoints again with the process's writes held (``checkpoint``): that second
# pass copies only what the first left. Left to grow, the WAL makes every reader's page
# look-up dearer, and a flood of sends costs much more CPU. Leaving this to the writer's
# own automatic checkpoint would run it inside a COMMIT, with the single writer held and
# every send waiting behind it. The automatic checkpoint stays, at 256 MB of WAL (with
# 4 KB pages), for any process that runs no such job (a command, the benchmark's
# seeder); it runs in a COMMIT, which is why such a process's writer COMMITs in the
# driver's thread. The process that runs the job turns it off on its writer
# (``own_checkpoints``), whose small transactions then commit inline
# (INLINE_COMMIT_MAX_CHANGES).
WAL_AUTOCHECKPOINT_PAGES = 65_536
# 128 MB of WAL with 4 KB pages. The pass with the writes held costs about the same
# however long the WAL is, so a longer WAL makes it rarer; but a longer WAL also makes
# every page look-up dearer. This length measured best under the send flood
# (bench/results/sqlite-user-message.md).
CHECKPOINT_RESTART_FRAMES = 32_768
_CHECKPOINT_LONGEST_SECONDS = 1.0
CHECKPOINT_INTERVAL_SECONDS: float | None = _CHECKPOINT_LONGEST_SECONDS
# The job's pace follows the WAL's growth (``checkpoint_delay``): when a checkpoint finds
# more frames than this, the next comes sooner, so that each copies about this many, down
# to CHECKPOINT_MIN_INTERVAL_SECONDS apart. Under a flood of sends (a big send writes its
# recipients' leaves) checkpoints a second apart each copied and synced so much at once
# that sends waited behind them (bench/results/sqlite-wal.md).
CHECKPOINT_TARGET_FRAMES = 4_000
CHECKPOINT_MIN_INTERVAL_SECONDS = 0.25
# The largest write transaction (rows changed, ``total_changes``) the checkpointing
# process's writer commits inline, on the event loop. A COMMIT writes the transaction's
# pages to the WAL (no sync: synchronous=NORMAL), a few for a presence update or a send
# to a small stream; in the driver's thread it cost a turn of the loop with the single
# writer held, and under the active-user load writes queued for it
# (bench/results/sqlite-connections.md). A bigger one (a send to a big stream writes a
# page per recipient) still commits in the thread, where its writes do not hold the
# loop.
INLINE_COMMIT_MAX_CHANGES = 100
# The writer's page cache (negative: KiB). Those recipients' index pages are read again
# by the next big send; SQLite's default cache lets them go, and the next insert reads
# them back from the OS. Readers keep the default.
WRITER_CACHE_KIB = 32_768
# Closing an idle connection never suspends: every engine here makes ``_Connection``s
# (an in-memory database, whose plain aiosqlite connections would go to their thread for
# every call, is refused by ``engine.normalize_url``).
CLOSES_INLINE = True


def install(engine: AsyncEngine, *, writer: bool = False) -> None:
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
        cursor.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        if writer:
            cursor.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        cursor.close()

    @sa.event.listens_for(sync_engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        write = conn.get_execution_options().get("hubbub_write", False)
        # Straight to the driver: through ``exec_driver_sql`` each transaction's BEGIN
        # was a whole SQLAlchemy execution, a large part of an empty read transaction's
        # cost.
        driver = conn.connection.driver_connection
        assert isinstance(driver, _Connection)  # what every engine here makes
        driver.begin(write)

    @sa.event.listens_for(sync_engine, "before_cursor_execute", retval=True)
    def _on_table(
        _conn: sa.Connection,
        _cursor: Any,
        statement: str,
        parameters: Any,
        context: Any,
        _executemany: bool,
    ) -> tuple[str, Any]:
        # The view's tables (``sqlite_staged.over_tables``).
        table = context.execution_options.get(TABLE_OPTION) if context is not None else None
        if not table:
            return statement, parameters
        if table == BOTH_TABLES:
            parameters = doubled(parameters)
        return on_table(statement, table), parameters

    @sa.event.listens_for(sync_engine, "before_cursor_execute")
    def _on_execute(
        conn: sa.Connection,
        _cursor: Any,
        _statement: str,
        _parameters: Any,
        context: Any,
        _executemany: bool,
    ) -> None:
        # Tells the dialect's connection where the statement runs (``_Connection``).
        if context is not None and context.execution_options.get(LONG_READ):
            driver = conn.connection.driver_connection
            if isinstance(driver, _Connection):
                driver.long_read_next = True


class _Connection(aiosqlite.Connection):
    """An aiosqlite connection that runs its statements inline, in the event loop's
    thread, and hands to its thread only what can take long.

    aiosqlite runs every call in its own thread and resumes the caller through the event
    loop: a turn of the loop per call, and under load each turn waits behind every other
    ready request, while the threads' wake-ups and their turns at the GIL cost the loop's
    thread more than the statements themselves. So statements and their fetches run
    inline, the readers' as the writer's. In the thread: a reader's statement marked
    ``LONG_READ`` (a narrow's walk, a search: their cost has no bound, and there SQLite's
    work holds no one else up), ``run_in_thread`` work, closing the connection, and the
    writer's ``COMMIT`` and ``ROLLBACK`` unless small (``_WriterConnection``). Running the
    readers' statements inline too took less of a core under the active-user load, and
    answered faster, than sending each of them to the thread
    (bench/results/sqlite-connections.md).

    A reader's ``BEGIN`` waits for the transaction's first statement (a deferred
    ``BEGIN`` reads nothing until then, and a transaction that runs none never begins),
    and is issued inline just before it, a long read's too. A long read's rows come back
    with it, in one turn: the
    thread fetches them right after executing (SQLAlchemy fetches them all at once
    anyway), and the fetch that follows is answered from them.
    """

    writer = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Rows fetched with their statement, by cursor, until fetched or closed.
        self._prefetched: dict[int, deque[Any]] = {}
        # A reader's BEGIN, not issued yet: the next statement issues it first.
        self._begin_pending = False
        # The next statement is a LONG_READ (set by ``install``'s execute event).
        self.long_read_next = False

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, sqlite3.Cursor):
            rows = self._prefetched.get(id(owner))
            if rows is not None and fn.__name__.startswith("fetch"):
                return _fetch(fn.__name__, rows, args, owner.arraysize)
            if fn.__name__ in ("execute", "executemany", "close"):
                self._prefetched.pop(id(owner), None)
            if fn.__name__ in ("execute", "executemany"):
                self._begin_now()
                long_read, self.long_read_next = self.long_read_next, False
                if long_read and not self.writer and fn.__name__ == "execute":
                    return await self._execute_and_fetch(owner, args)
        if owner is self._connection and fn.__name__ in ("commit", "rollback", "close"):
            # Nothing ran since BEGIN: there is no transaction to end.
            self._begin_pending = False
        if self._in_thread(fn):
            return await self._on_thread(fn, *args, **kwargs)
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        return fn(*args, **kwargs)

    def _begin_now(self) -> None:
        """Issue the pending ``BEGIN``, inline, before the transaction's first statement
        (wherever that runs)."""
        if self._begin_pending:
            if not self._running or self._connection is None:
                raise ValueError("Connection closed")
            self._begin_pending = False
            self._connection.execute("BEGIN").close()

    def begin(self, write: bool) -> None:
        """Begin a transaction: a reader's ``BEGIN`` waits for its first statement (see
        above). Called from SQLAlchemy's ``begin`` event, in its greenlet."""
        if write:
            raise ValueError("a write transaction needs the writer's connection")
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        self._begin_pending = True

    async def _on_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn`` in the driver's thread."""
        return await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    def fetch_all(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The rows of one statement, given to the driver without SQLAlchemy
        (``db/fast.py``), inline as this connection's other statements, in whatever
        transaction is open."""
        self._begin_now()
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        return _all_rows(self._connection, sql, values)

    def execute_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for each of ``rows``, given to the driver without SQLAlchemy,
        inline as ``fetch_all``."""
        self._begin_now()
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        self._connection.executemany(sql, rows).close()

    async def fetch_all_long(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """``fetch_all`` for a ``LONG_READ`` statement: a reader's in its thread, with its
        rows (as ``_execute_and_fetch``); the writer's inline, as all of its statements."""
        if self.writer:
            return self.fetch_all(sql, values)
        self._begin_now()

        def run() -> list[tuple[Any, ...]]:
            if self._connection is None:
                raise ValueError("Connection closed")
            return _all_rows(self._connection, sql, values)

        found: list[tuple[Any, ...]] = await self._on_thread(run)
        return found

    async def run_in_thread(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """``work`` on the driver's connection in this connection's thread, the writer's
        too, in whatever transaction is open: for the rare statement that reads much of
        the database (``refresh_statistics``), which inline would hold the event loop."""

        def run() -> None:
            if self._connection is None:
                raise ValueError("Connection closed")
            work(self._connection)

        self._begin_now()
        await self._on_thread(run)

    async def _execute_and_fetch(self, cursor: sqlite3.Cursor, args: tuple[Any, ...]) -> Any:
        def run() -> list[Any] | None:
            cursor.execute(*args)
            return cursor.fetchall() if cursor.description is not None else None

        rows = await self._on_thread(run)
        if rows is not None:
            self._prefetched[id(cursor)] = deque(rows)
        return cursor

    def _in_thread(self, fn: Callable[..., Any]) -> bool:
        """Whether a call other than a long read's statement goes to the thread."""
        if getattr(fn, "__self__", None) is self._connection:  # the connection's own calls
            name = getattr(fn, "__name__", "")
            if name == "cursor":
                return False
            if name in ("commit", "rollback"):
                # With no transaction open there is nothing to end (a settle slice
                # committed in the thread already: ``sqlite_staged._move_on``).
                open_transaction = self._connection is not None and self._connection.in_transaction
                return open_transaction and not self._ends_inline()
            return True  # close, and anything unforeseen
        return False  # a cursor's calls

    def _ends_inline(self) -> bool:
        """Whether this transaction's COMMIT or ROLLBACK runs inline: a reader's always."""
        return True


def _all_rows(connection: sqlite3.Connection, sql: str, values: Sequence[Any]) -> list[Any]:
    """All rows of one statement (``fetch_all``, inline or in the thread)."""
    cursor = connection.execute(sql, values)
    try:
        rows: list[Any] = cursor.fetchall()
        return rows
    finally:
        cursor.close()


def _fetch(name: str, rows: deque[Any], args: tuple[Any, ...], arraysize: int) -> Any:
    """``fetchall``/``fetchone``/``fetchmany`` answered from rows fetched already."""
    if name == "fetchone":
        return rows.popleft() if rows else None
    count = len(rows) if name == "fetchall" else (args[0] if args else arraysize)
    return [rows.popleft() for _ in range(min(count, len(rows)))]


class _WriterConnection(_Connection):
    """The writer: its statements run inline (see ``_Connection``), and so does its BEGIN
    IMMEDIATE, which in the thread cost a turn of the loop with the single writer held:
    under load a write transaction then held the writer for many times its own work, and
    writes queued behind one another. Its COMMIT and ROLLBACK run in the thread, where a
    COMMIT's automatic checkpoint holds no one but writers, until the process takes over
    the checkpoints (``own_checkpoints``); then only a big transaction's (see
    INLINE_COMMIT_MAX_CHANGES)."""

    writer = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # This process checkpoints (``own_checkpoints``): no automatic checkpoint here.
        self.owns_checkpoints = False
        # ``total_changes`` when the transaction began.
        self._changes_at_begin = 0

    def own_checkpoints(self) -> None:
        """Turn the automatic checkpoint off: this process's job checkpoints instead, so a
        COMMIT never copies the WAL and a small one may run inline (``_ends_inline``)."""
        if self._connection is None or not self._running:
            raise ValueError("Connection closed")
        self._connection.execute("PRAGMA wal_autocheckpoint=0").close()
        self.owns_checkpoints = True

    def _ends_inline(self) -> bool:
        """A small transaction ends inline once no COMMIT can checkpoint (see
        INLINE_COMMIT_MAX_CHANGES); any other, in the thread."""
        if not self.owns_checkpoints or self._connection is None:
            return False
        changed = self._connection.total_changes - self._changes_at_begin
        return changed <= INLINE_COMMIT_MAX_CHANGES

    def begin(self, write: bool) -> None:
        """BEGIN IMMEDIATE (``write``) or BEGIN, inline if the write lock is free; if a
        writer in another process holds it, again in the thread, waiting up to
        busy_timeout there (``await_only``: the ``begin`` event runs in SQLAlchemy's
        greenlet)."""
        connection = self._connection
        if connection is None or not self._running:
            raise ValueError("Connection closed")
        sql = "BEGIN IMMEDIATE" if write else "BEGIN"
        self._changes_at_begin = connection.total_changes
        connection.execute("PRAGMA busy_timeout=0")
        try:
            connection.execute(sql).close()
            return
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
                raise
        finally:
            connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        await_only(super()._on_thread(lambda: connection.execute(sql).close()))


def _engine(url: str, connection_class: type[_Connection], **pool: Any) -> AsyncEngine:
    path = make_url(url).database
    assert path is not None

    async def connect() -> aiosqlite.Connection:
        # Used from the loop's thread and from aiosqlite's, never from both at once.
        connector = partial(sqlite3.connect, path, check_same_thread=False)
        connection = connection_class(connector, iter_chunk_size=64)
        connection._thread.daemon = True
        return await connection

    engine = create_async_engine(url, async_creator=connect, **pool)
    install(engine, writer=connection_class.writer)
    return engine


def create_engine(url: str) -> AsyncEngine:
    """The engine of reads."""
    return _engine(url, _Connection, **ENGINE_KWARGS)


def create_write_engine(url: str) -> AsyncEngine | None:
    """The engine of write transactions: one connection (writes are serialized) running
    its statements inline."""
    # No rollback when the connection goes back to the pool: the transaction has ended.
    return _engine(
        url,
        _WriterConnection,
        pool_size=1,
        max_overflow=0,
        pool_timeout=POOL_TIMEOUT_SECONDS,
        pool_reset_on_return=None,
    )


def insert(table: sa.Table) -> Any:
    return sqlite_insert(table)


@functools.lru_cache(maxsize=64)
def _insert_message_sql(columns: tuple[str, ...]) -> str:
    """The message's INSERT for these columns (a send gives the same few sets)."""
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO message ({', '.join(columns)}) VALUES ({marks}) RETURNING id"


async def insert_message(
    conn: AsyncConnection, values: dict[str, Any], flags: dict[int, int]
) -> int:
    """A new message (``values``: its columns) and its user_message rows, one per
    recipient (``flags``: user id -> bits); returns its id.

    The rows are staged (``sqlite_staged``), in key order, so that they are appended.
    Both statements go to the driver without SQLAlchemy, inline on the writer's
    connection, with the single writer held: SQLAlchemy's execution of the two INSERTs
    cost more than SQLite's own work, and it built each of a big stream's rows into a
    parameter dictionary first (``bench/insert_message.py`` measures the difference).
    Every value is one the driver takes as SQLAlchemy would give it (numbers, strings,
    booleans, None)."""
    sql = _insert_message_sql(tuple(values))
    driver = driver_of(conn)
    try:
        message_id = int(driver.fetch_all(sql, tuple(values.values()))[0][0])
        rows = [(message_id, user_id, flags[user_id]) for user_id in sorted(flags)]
        driver.execute_many(INSERT_STAGED, rows)
    except sqlite3.Error as exc:
        # As SQLAlchemy would raise it (an IntegrityError is told apart by its class).
        raise sa.exc.DBAPIError.instance(sql, values, exc, sqlite3.Error) from exc
    return message_id


def driver_of(conn: AsyncConnection) -> _Connection:
    """``conn``'s driver connection, for statements without SQLAlchemy: every engine
    here makes ``_Connection``s (an in-memory database is refused by
    ``engine.normalize_url``)."""
    sync = conn.sync_connection
    driver = sync.connection.driver_connection if sync is not None else None
    if not isinstance(driver, _Connection):
        raise TypeError(f"not a hubbub SQLite connection: {driver!r}")
    return driver


def in_ids(column: sa.ColumnElement[int], key: str) -> sa.ColumnElement[bool]:
    """``column IN`` the ids of parameter ``key`` (``ids_argument``), for a list that may be
    long (a big stream's subscribers): one JSON argument, where SQLAlchemy's expansion of
    each value into a parameter of its own cost more than the query."""
    values = sa.func.json_each(sa.bindparam(key, type_=sa.String)).table_valued("value")
    return column.in_(sa.select(values.c.value))


def ids_argument(ids: Collection[Any]) -> str:
    return json.dumps(sorted(ids))


# Rows ANALYZE reads per index: bounded, so that even a multi-gigabyte database is
# analyzed in well under a second.
ANALYSIS_LIMIT = 10_000


async def checkpoint(url: str, write_lock: WriterLock | None) -> int:
    """Copy the WAL's committed pages into the database file (see CHECKPOINT_INTERVAL_SECONDS);
    the number of frames the WAL held (written since it last started over). Once that is
    CHECKPOINT_RESTART_FRAMES, a second pass with ``write_lock`` (this process's writes)
    held, so that the next write transaction finds the WAL all copied and starts it over;
    the database file is synced before it, without the writes held, and the requests'
    writes waiting then go before it (a background write: ``db/writer_lock.py``).

    PASSIVE: it waits for no reader or writer, copying what it can; SQLite starts the WAL
    over once a checkpoint has copied all of it."""
    path = make_url(url).database
    assert path, "an in-memory database is refused by engine.normalize_url"
    frames = await _checkpoint_pass(path)
    if write_lock is not None and frames >= CHECKPOINT_RESTART_FRAMES:
        try:
            await asyncio.to_thread(sync_database_file, path)
        except OSError:
            # The held pass syncs the file itself (as it did before this sync existed).
            logger.exception("syncing %s before the checkpoint's held pass failed", path)
        async with write_lock.held(background=True):
            await _checkpoint_pass(path)
    return frames


# A file descriptor of each database file this process syncs (``sync_database_file``),
# by path, with the file's identity (device, inode). Never closed: closing any descriptor
# of a file drops every POSIX lock this process holds on it, SQLite's connections'
# included, and another process could then take the database for unused and, say,
# delete its WAL. One per database file for the process's life (a test's temporary
# databases each keep one).
_SYNC_DESCRIPTORS: dict[str, tuple[tuple[int, int], int]] = {}
# macOS has no fdatasync.
_sync_data = getattr(os, "fdatasync", os.fsync)


def sync_database_file(path: str) -> None:
    """``fdatasync`` the database file: what the checkpoints copied into it reaches the
    disk now, before the pass with the writes held.

    A PASSIVE checkpoint syncs the file only when it finds nothing left to copy at its
    end; under a flood of sends each pass finds new frames, so none syncs, and the pages
    the passes copied stay dirty until the pass with the writes held, which finds all
    copied and syncs them, most of that pass's hold of the writer and of the send flood's
    tail. Synced here first, without the writer, the held pass has little left to sync
    (bench/results/caches.md, *A page's users kept, flag changes built once, and where
    the writer's holds go*)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return
    identity = (status.st_dev, status.st_ino)
    kept = _SYNC_DESCRIPTORS.get(path)
    if kept is None or kept[0] != identity:
        # A file replaced at the same path gets a descriptor of its own; the old one
        # stays open (see _SYNC_DESCRIPTORS).
        kept = _SYNC_DESCRIPTORS[path] = (identity, os.open(path, os.O_RDONLY))
    _sync_data(kept[1])


async def _checkpoint_pass(path: str) -> int:
    """One PASSIVE checkpoint, the frames the WAL held: on its own short-lived connection,
    in a thread (a checkpoint syncs the file, and must not run inside a transaction)."""

    def run() -> int:
        connection = sqlite3.connect(path)
        try:
            connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            _busy, frames, _copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            return max(0, int(frames))  # -1: not in WAL mode
        finally:
            connection.close()

    return await asyncio.to_thread(run)


async def own_checkpoints(conn: AsyncConnection) -> None:
    """This process checkpoints from now on (its checkpoint job's first run): the writer
    ``conn`` (in a write transaction) stops checkpointing in its COMMITs. A writer
    connection opened later, should the pool replace this one, checkpoints in its
    COMMITs again, in the thread: slower, never wrong."""
    driver = (await conn.get_raw_connection()).driver_connection
    if isinstance(driver, _WriterConnection):
        driver.own_checkpoints()


def checkpoint_delay(frames: int, last_delay: float) -> float:
    """How long to wait for the next checkpoint, given the ``frames`` the last one found
    after waiting ``last_delay``: the time the WAL takes, at that pace, to grow by
    CHECKPOINT_TARGET_FRAMES, within CHECKPOINT_MIN_INTERVAL_SECONDS and
    CHECKPOINT_INTERVAL_SECONDS."""
    if frames <= 0:
        return _CHECKPOINT_LONGEST_SECONDS
    wanted = last_delay * CHECKPOINT_TARGET_FRAMES / frames
    return min(_CHECKPOINT_LONGEST_SECONDS, max(CHECKPOINT_MIN_INTERVAL_SECONDS, wanted))


async def refresh_statistics(conn: AsyncConnection) -> None:
    """Give the query planner row-count statistics (``sqlite_stat1``). SQLite never
    gathers them by itself, and without them it guesses, for example scanning a million
    messages newest-first for a direct-message narrow instead of using the sender index.

    Only hubbub's own tables: the full-text index's shadow tables are only ever read by
    their keys, and analyzing them read most of their pages, many times the cost of the
    rest. In the connection's thread: the
    writer runs its statements inline, and this one held every request meanwhile."""
    driver = driver_of(conn)
    statements = [f"PRAGMA analysis_limit={ANALYSIS_LIMIT}"]
    statements += [f'ANALYZE "{table.name}"' for table in stored_tables("sqlite")]

    def run(connection: sqlite3.Connection) -> None:
        for statement in statements:
            connection.execute(statement).close()
        pin_staged_statistics(connection)

    await driver.run_in_thread(run)
