"""The database handle every action and query uses: ``read()`` and ``write()`` transactions."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from hubbub.db import dialects
from hubbub.db.reader_pool import ReaderPool
from hubbub.db.writer_lock import WriterLock


class DatabaseUnavailableError(RuntimeError):
    """The database cannot be reached or opened; the message is meant for the user."""


def normalize_url(url: str) -> str:
    """Accept the URLs users write (``postgresql://``, ``sqlite:///``) and pick our drivers."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+asyncpg").render_as_string(hide_password=False)
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            # An in-memory database ends with the process, taking every acknowledged
            # message with it, and each connection would see a database of its own.
            raise DatabaseUnavailableError(
                f"unsupported database URL {url!r}: SQLite needs a database file (sqlite:///PATH)"
            )
        return parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    raise DatabaseUnavailableError(
        f"unsupported database URL {url!r}: use sqlite:///PATH or postgresql://USER@HOST/DB"
    )


def _create_private_file(path: Path) -> None:
    """Create the SQLite file readable by its owner only (SQLite gives its -wal and -shm
    files the database file's mode), in a directory that is too when created here."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        # SQLite itself reports what is wrong with the place when it opens the file.
        pass


class Database:
    def __init__(self, url: str) -> None:
        self.url = normalize_url(url)
        sa_url = make_url(self.url)
        self.dialect_name = sa_url.get_backend_name()
        self.dialect: ModuleType = dialects.for_name(self.dialect_name)
        if self.dialect_name == "sqlite" and sa_url.database:
            _create_private_file(Path(sa_url.database))
        self.engine: AsyncEngine = self.dialect.create_engine(self.url)
        self.write_engine: AsyncEngine = self.dialect.create_write_engine(self.url) or self.engine
        # The same pool as ``engine``, with the dialect's options for read transactions.
        self.read_engine: AsyncEngine = (
            self.engine.execution_options(**self.dialect.READ_EXECUTION_OPTIONS)
            if self.dialect.READ_EXECUTION_OPTIONS
            else self.engine
        )
        # SQLite's write transactions, marked for its BEGIN IMMEDIATE once (setting the
        # option on each connection was a greenlet call for every transaction).
        self._serial_write_engine: AsyncEngine = self.write_engine.execution_options(
            hubbub_write=True
        )
        self._write_lock = WriterLock() if self.dialect.SERIALIZE_WRITES else None
        self._closes_inline: bool = self.dialect.CLOSES_INLINE
        # Whether ``checkpoint`` ran: this process is the one that checkpoints.
        self._owns_checkpoints = False
        # SQLite's readers stay open between read transactions (``db/reader_pool.py``),
        # as many as its pool allows.
        self.reader_pool: ReaderPool | None = None
        if self.is_sqlite:
            pool = self.dialect.ENGINE_KWARGS
            self.reader_pool = ReaderPool(
                self.read_engine, pool["pool_size"] + pool["max_overflow"], pool["pool_timeout"]
            )

    @property
    def is_sqlite(self) -> bool:
        return self.dialect_name == "sqlite"

    @property
    def serializes_writes(self) -> bool:
        """Whether write transactions run one at a time (SQLite's single writer): work a
        write can do before its transaction is then worth doing there."""
        return self._write_lock is not None

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A read transaction (SQLite: one snapshot; PostgreSQL: each statement its own
        snapshot, as READ COMMITTED gives, without BEGIN and COMMIT)."""
        pool = self.reader_pool
        take: Callable[[], Awaitable[AsyncConnection]]
        give_back: Callable[[AsyncConnection], Awaitable[None]]
        if pool is None:
            take, give_back = self.read_engine.connect, self._give_back
        else:
            take, give_back = pool.take, pool.give_back
        async with self._transaction(take, give_back) as conn:
            yield conn

    @asynccontextmanager
    async def write(self, *, background: bool = False) -> AsyncIterator[AsyncConnection]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        On SQLite writes are serialized in-process (SQLite has one writer), and start with
        BEGIN IMMEDIATE so that a writer in another process makes us wait, not fail. A
        ``background`` write (a periodic job's) lets the requests' writes waiting for the
        writer go first (``db/writer_lock.py``).
        """
        if self._write_lock is None:
            async with self._transaction(self.engine.connect, self._give_back) as conn:
                yield conn
            return
        async with (
            self._write_lock.held(background=background),
            self._transaction(self._serial_write_engine.connect, self._give_back) as conn,
        ):
            yield conn

    @asynccontextmanager
    async def _transaction(
        self,
        take: Callable[[], Awaitable[AsyncConnection]],
        give_back: Callable[[AsyncConnection], Awaitable[None]],
    ) -> AsyncIterator[AsyncConnection]:
        """A connection from ``take`` in a transaction, handed to ``give_back`` when the
        block ends."""
        conn = await take()
        try:
            async with conn.begin():
                yield conn
        finally:
            await give_back(conn)

    async def _give_back(self, conn: AsyncConnection) -> None:
        """Return ``conn`` to its pool, directly when its close never suspends, without
        the turn of the loop that SQLAlchemy's ``async with`` spends on it, with the
        single writer still held, for SQLite's writer (its readers are kept open instead:
        ``db/reader_pool.py``).

        SQLAlchemy closes a connection in a task of its own, so that a cancelled caller
        cannot abandon the close half-way. On SQLite (``CLOSES_INLINE``), once its
        transaction has ended, a connection's close runs in the loop's thread (the writer
        has no reset on return; a reader's reset, a ROLLBACK, is inline) and never
        suspends, so nothing can interrupt it: it runs directly. Any other connection
        (PostgreSQL's, resetting over the network; one still in a transaction, or
        invalidated) leaves the way ``async with`` would have taken."""
        if self._closes_inline and not conn.invalidated and not conn.in_transaction():
            await conn.close()
        else:
            await conn.__aexit__(None, None, None)

    async def check_reachable(self) -> None:
        try:
            async with self.engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except Exception as exc:
            raise DatabaseUnavailableError(
                f"cannot connect to the database at {make_url(self.url)!r}: {exc}"
            ) from exc

    async def refresh_statistics(self) -> None:
        """Bring the query planner's statistics up to date (see the dialect modules)."""
        async with self.write() as conn:
            await self.dialect.refresh_statistics(conn)

    @property
    def checkpoint_interval(self) -> float | None:
        """How often a server should call ``checkpoint`` (None: never)."""
        interval: float | None = self.dialect.CHECKPOINT_INTERVAL_SECONDS
        return interval

    async def checkpoint(self) -> int:
        """Move written pages from the log into the database file (SQLite's WAL); the
        number of pages (frames) the log held. The dialect may hold this process's writes
        for part of it (``sqlite.checkpoint``). The first call makes this process the one
        that checkpoints: its writer's COMMITs stop doing so (``sqlite.own_checkpoints``)."""
        if not self._owns_checkpoints:
            async with self.write() as conn:
                await self.dialect.own_checkpoints(conn)
            self._owns_checkpoints = True
        frames: int = await self.dialect.checkpoint(self.url, self._write_lock)
        return frames

    @property
    def settle_interval(self) -> float | None:
        """How often a server should call ``settle_staged`` (None: never)."""
        interval: float | None = self.dialect.SETTLE_INTERVAL_SECONDS
        return interval

    async def settle_staged(self) -> int:
        """Move the staged ``user_message`` rows into their user-major table (SQLite:
        ``sqlite_staged``); the number moved."""
        moved: int = await self.dialect.settle_staged(self)
        return moved

    def checkpoint_delay(self, frames: int, last_delay: float) -> float:
        """When to checkpoint next, after one that found ``frames`` after ``last_delay``
        seconds (the dialect's pace: ``sqlite.checkpoint_delay``)."""
        delay: float = self.dialect.checkpoint_delay(frames, last_delay)
        return delay

    async def dispose(self) -> None:
        if self.reader_pool is not None:
            await self.reader_pool.close()
        await self.engine.dispose()
        if self.write_engine is not self.engine:
            await self.write_engine.dispose()


def is_value_out_of_range(exc: BaseException) -> bool:
    """The database refused a number too large for its column: asyncpg checks a bound
    argument against the column type before sending it ("value out of int32 range"), and
    PostgreSQL reports SQLSTATE 22003 (numeric_value_out_of_range) for the rest."""
    if not isinstance(exc, sa_exc.DBAPIError):
        return False
    orig = exc.orig
    return getattr(orig, "sqlstate", None) == "22003" or "out of int32 range" in str(orig)


def is_unique_violation(exc: BaseException) -> bool:
    """An insert lost to a concurrent transaction's row on a unique index: PostgreSQL's
    SQLSTATE 23505 (unique_violation), or SQLite's "UNIQUE constraint failed"."""
    if not isinstance(exc, sa_exc.IntegrityError):
        return False
    orig = exc.orig
    return getattr(orig, "sqlstate", None) == "23505" or "UNIQUE constraint failed" in str(orig)
