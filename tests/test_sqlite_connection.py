"""SQLite connections run their statements inline and hand to aiosqlite's thread only
what can take long: ``db/dialects/sqlite.py``."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiosqlite.core
import pytest
import sqlalchemy as sa

from hubbub.db.dialects import long_read
from hubbub.db.dialects import sqlite as sqlite_dialect
from hubbub.db.engine import Database
from hubbub.db.fast import fetch_rows, fetch_value
from hubbub.db.migrate import upgrade
from hubbub.workers.periodic import checkpoint_pace, run_every


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite:///{tmp_path / 'hubbub.db'}")
    await upgrade(database)
    async with database.write() as conn:
        await conn.execute(sa.text("CREATE TABLE t (n INTEGER)"))
        await conn.execute(sa.text("INSERT INTO t VALUES (1), (2), (3)"))
    yield database
    await database.dispose()


class ThreadCalls:
    """Counts the calls that go to aiosqlite's thread (each costs a turn of the loop)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        original: Callable[..., Awaitable[Any]] = aiosqlite.core.Connection._execute

        async def spy(conn: Any, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            self.names.append(getattr(fn, "__name__", "?"))
            return await original(conn, fn, *args, **kwargs)

        monkeypatch.setattr(aiosqlite.core.Connection, "_execute", spy)


async def test_reads_run_inline_a_long_read_is_one_turn_and_a_write_transaction_one(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with db.read() as conn:  # a pooled connection, so no connecting below
        await conn.execute(sa.text("SELECT 1"))
    async with db.write() as conn:
        await conn.execute(sa.text("SELECT 1"))
    calls = ThreadCalls(monkeypatch)
    ordered = sa.text("SELECT n FROM t ORDER BY n")
    async with db.read() as conn:
        rows = (await conn.execute(ordered)).all()
        assert [r.n for r in rows] == [1, 2, 3]
        assert (await fetch_value(conn, _COUNT)) == 3  # ``db/fast.py``'s way
    assert calls.names == []  # BEGIN, the statements, their rows and COMMIT: inline
    async with db.read() as conn:
        rows = (await conn.execute(long_read(ordered))).all()
        assert [r.n for r in rows] == [1, 2, 3]
        # The mark was the long read's alone.
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 3
    assert len(calls.names) == 1  # the long read and its rows together
    calls.names.clear()
    async with db.write() as conn:
        await conn.execute(sa.text("INSERT INTO t VALUES (4)"))
        await conn.execute(sa.text("UPDATE t SET n = n + 10 WHERE n = 4"))
        assert (await conn.execute(sa.text("SELECT max(n) FROM t"))).scalar() == 14
    # BEGIN IMMEDIATE inline (the write lock was free); the COMMIT, which may run a WAL
    # checkpoint, in the thread.
    assert calls.names == ["commit"]


_COUNT = sa.select(sa.func.count()).select_from(sa.table("t"))


async def test_once_the_process_checkpoints_small_write_transactions_end_inline(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint job's first run turns the writer's automatic checkpoint off; from
    then on a COMMIT or ROLLBACK of at most INLINE_COMMIT_MAX_CHANGES rows runs inline,
    a bigger one in the thread."""
    autocheckpoint = "PRAGMA wal_autocheckpoint"
    limit = sqlite_dialect.INLINE_COMMIT_MAX_CHANGES
    calls = ThreadCalls(monkeypatch)
    async with db.write() as conn:
        assert (await conn.exec_driver_sql(autocheckpoint)).scalar_one() > 0
        await conn.execute(sa.text("INSERT INTO t VALUES (4)"))
    assert calls.names == ["commit"]  # no checkpoint job yet: a COMMIT may checkpoint
    await db.checkpoint()
    async with db.write() as conn:
        assert (await conn.exec_driver_sql(autocheckpoint)).scalar() == 0
    async with db.read() as conn:  # readers keep theirs: they never commit a write
        assert (await conn.exec_driver_sql(autocheckpoint)).scalar_one() > 0

    def rows(start: int, count: int) -> list[dict[str, int]]:
        return [{"n": n} for n in range(start, start + count)]

    insert = sa.text("INSERT INTO t VALUES (:n)")
    calls.names.clear()
    async with db.write() as conn:
        await conn.execute(insert, rows(100, limit))
    assert calls.names == []
    async with db.write() as conn:
        await conn.execute(insert, rows(1000, limit + 1))
    assert calls.names == ["commit"]
    for count, expected in ((limit, []), (limit + 1, ["rollback"])):
        calls.names.clear()
        with pytest.raises(RuntimeError):
            async with db.write() as conn:
                await conn.execute(insert, rows(5000, count))
                raise RuntimeError("changed my mind")
        assert calls.names == expected
    calls.names.clear()
    async with db.write() as conn:  # only this transaction's changes count, not the 400 before
        await conn.execute(insert, rows(9000, 1))
    assert calls.names == []
    async with db.read() as conn:
        assert (await fetch_value(conn, _COUNT)) == 4 + limit + limit + 1 + 1


_ORDERED: sa.Select[Any] = (
    sa.select(sa.column("n")).select_from(sa.table("t")).order_by(sa.column("n"))
)
_ORDERED_LONG = long_read(_ORDERED)  # a copy of it, marked


async def test_fast_reads_marked_long_run_in_a_readers_thread(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fetch_rows`` of a statement marked ``long_read`` (``/register``'s unread rows): a
    reader's in its thread, with its rows, in the reader's transaction; the writer's
    inline, as all its statements."""
    async with db.read() as conn:  # pooled connections: no connecting below
        await conn.execute(sa.text("SELECT 1"))
    async with db.write() as conn:
        await conn.execute(sa.text("SELECT 1"))
    calls = ThreadCalls(monkeypatch)
    async with db.read() as conn:
        assert [tuple(r) for r in await fetch_rows(conn, _ORDERED)] == [(1,), (2,), (3,)]
        assert calls.names == []
        assert [tuple(r) for r in await fetch_rows(conn, _ORDERED_LONG)] == [(1,), (2,), (3,)]
        assert calls.names == ["run"]
        # The same snapshot as the reader's other statements: a write committed now is
        # not in it.
        async with db.write() as writer:
            await writer.execute(sa.text("INSERT INTO t VALUES (4)"))
        assert len(await fetch_rows(conn, _ORDERED_LONG)) == 3
    calls.names.clear()
    async with db.write() as conn:
        assert len(await fetch_rows(conn, _ORDERED_LONG)) == 4
    assert calls.names == ["commit"]  # the read inline; the COMMIT as ever


async def test_a_long_read_lets_the_loop_go_on(db: Database) -> None:
    """A read marked ``LONG_READ`` runs in the driver's thread: the loop serves others
    meanwhile; the same statement unmarked holds the loop until it is done."""
    slow = sa.text(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
        " WHERE x < 2000000) SELECT sum(x) FROM c"
    )
    for statement, loop_went_on in ((long_read(slow), True), (slow, False)):
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                ticks += 1

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0)
        async with db.read() as conn:
            before = ticks
            assert (await conn.execute(statement)).scalar() == 2000000 * 2000001 // 2
            went_on = ticks - before > 10
        ticker.cancel()
        assert went_on is loop_went_on


async def test_connections_go_back_to_their_pool_without_a_task(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLAlchemy's ``async with`` closes a connection in a task of its own (a turn of the
    loop, with the single writer held for a write); the writer's and the readers' close,
    which cannot suspend once their transaction has ended, runs directly, after a commit
    and after a rollback alike."""
    async with db.write() as conn:  # connected once, before counting
        await conn.execute(sa.text("SELECT 1"))
    async with db.read() as conn:
        await conn.execute(sa.text("SELECT 1"))
    tasks: list[str] = []
    create_task = asyncio.create_task

    def spy(coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        tasks.append(coro.__qualname__)
        return create_task(coro, **kwargs)

    monkeypatch.setattr(asyncio, "create_task", spy)
    async with db.write() as conn:
        await conn.execute(sa.text("INSERT INTO t VALUES (4)"))
    with pytest.raises(sa.exc.OperationalError):
        async with db.write() as conn:
            await conn.execute(sa.text("INSERT INTO no_such_table VALUES (1)"))
    async with db.read() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 4
    with pytest.raises(sa.exc.OperationalError):
        async with db.read() as conn:
            await conn.execute(sa.text("SELECT * FROM no_such_table"))
    assert tasks == []
    # The reader was kept for the next read after the failure (none is in use).
    assert db.reader_pool is not None and db.reader_pool.in_use == 0
    async with db.write() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 4
    # An invalidated writer is closed the SQLAlchemy way, and the next write reconnects.
    tasks.clear()
    with pytest.raises(sa.exc.SQLAlchemyError):
        async with db.write() as conn:
            await conn.invalidate()
            await conn.execute(sa.text("INSERT INTO t VALUES (5)"))
    assert tasks == ["AsyncConnection.close"]
    async with db.write() as conn:
        await conn.execute(sa.text("INSERT INTO t VALUES (6)"))
    async with db.read() as conn:
        values = sorted((await conn.execute(sa.text("SELECT n FROM t"))).scalars())
    assert values == [1, 2, 3, 4, 6]


@pytest.mark.parametrize("long", [False, True])
async def test_a_reads_begin_waits_for_its_first_statement(
    db: Database, tmp_path: Path, long: bool
) -> None:
    """A reader's deferred BEGIN is issued just before the transaction's first statement
    (inline, before a long read too), not at once: the transaction is one snapshot all
    the same, and one that ran no statement never began."""
    other = sqlite3.connect(tmp_path / "hubbub.db", isolation_level=None)
    count = sa.text("SELECT count(*) FROM t")
    first = long_read(count) if long else count
    try:
        async with db.read() as conn:
            raw = await conn.get_raw_connection()
            driver = raw.driver_connection
            assert driver is not None and not driver._connection.in_transaction
            assert (await conn.execute(first)).scalar() == 3
            assert driver._connection.in_transaction
            other.execute("INSERT INTO t VALUES (9)")  # committed meanwhile
            assert (await conn.execute(count)).scalar() == 3  # the same snapshot
            assert (await conn.execute(long_read(count))).scalar() == 3
        assert not driver._connection.in_transaction
        async with db.read() as conn:  # no statement: no transaction ever begins
            idle = (await conn.get_raw_connection()).driver_connection
            assert idle is not None and not idle._connection.in_transaction
        assert not idle._connection.in_transaction
        async with db.read() as conn:
            assert (await conn.execute(count)).scalar() == 4
    finally:
        other.close()


async def test_a_cancelled_read_gives_its_connection_back(db: Database) -> None:
    """A request cancelled while its long read runs in the driver's thread (a client that
    went away): the transaction ends and the connection goes back to the pool."""
    started = asyncio.Event()

    async def slow_read() -> None:
        async with db.read() as conn:
            started.set()
            await conn.execute(
                long_read(
                    sa.text(
                        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                        " WHERE x < 3000000) SELECT sum(x) FROM c"
                    )
                )
            )

    task = asyncio.create_task(slow_read())
    await started.wait()
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert db.reader_pool is not None and db.reader_pool.in_use == 0
    async with db.read() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 3


async def test_a_failed_write_rolls_back_and_the_writer_goes_on(db: Database) -> None:
    with pytest.raises(sa.exc.OperationalError):
        async with db.write() as conn:
            await conn.execute(sa.text("INSERT INTO t VALUES (5)"))
            await conn.execute(sa.text("INSERT INTO no_such_table VALUES (1)"))
    async with db.write() as conn:
        await conn.execute(sa.text("INSERT INTO t VALUES (6)"))
    async with db.read() as conn:
        values = sorted((await conn.execute(sa.text("SELECT n FROM t"))).scalars())
    assert values == [1, 2, 3, 6]


async def test_a_long_reads_rows_fetched_with_it_serve_every_fetch(db: Database) -> None:
    async with db.read() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        driver.long_read_next = True  # as the execute event marks a LONG_READ
        cursor = await driver.cursor()  # as SQLAlchemy executes
        await cursor.execute("SELECT n FROM t ORDER BY n")
        assert driver._prefetched  # the rows came back with the statement
        assert await cursor.fetchone() == (1,)
        assert await cursor.fetchmany(1) == [(2,)]
        assert await cursor.fetchall() == [(3,)]
        assert await cursor.fetchone() is None
        await cursor.close()


async def test_a_writer_in_another_process_makes_ours_wait_without_stopping_the_loop(
    db: Database, tmp_path: Path
) -> None:
    # Another process's writer (a command run beside the server) holds the write lock.
    other = sqlite3.connect(tmp_path / "hubbub.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO t VALUES (7)")

    async def write() -> None:
        async with db.write() as conn:
            await conn.execute(sa.text("INSERT INTO t VALUES (8)"))

    writing = asyncio.create_task(write())
    await asyncio.sleep(0.3)
    assert not writing.done()
    # Our BEGIN IMMEDIATE waits in aiosqlite's thread: reads and the loop go on.
    async with db.read() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 3
    other.execute("COMMIT")
    other.close()
    await asyncio.wait_for(writing, 10)
    async with db.read() as conn:
        values = sorted((await conn.execute(sa.text("SELECT n FROM t"))).scalars())
    assert values == [1, 2, 3, 7, 8]


async def test_commits_leave_checkpoints_to_the_background_job(
    db: Database, tmp_path: Path
) -> None:
    """A commit of more pages than SQLite's default automatic checkpoint (1,000) stays in
    the WAL; ``Database.checkpoint`` (the server's job) copies it into the file."""
    database_file = tmp_path / "hubbub.db"
    async with db.write() as conn:
        assert (await conn.exec_driver_sql("PRAGMA cache_size")).scalar() == -32768
        # Kept on the writer too, at least twice where the job starts the WAL over, as a
        # backstop (see CHECKPOINT_RESTART_FRAMES).
        autocheckpoint = sqlite_dialect.WAL_AUTOCHECKPOINT_PAGES
        assert autocheckpoint >= 2 * sqlite_dialect.CHECKPOINT_RESTART_FRAMES
        assert (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar() == autocheckpoint
        await conn.execute(sa.text("CREATE TABLE big (payload BLOB)"))
    async with db.read() as conn:
        assert (await conn.exec_driver_sql("PRAGMA cache_size")).scalar() == -2000
        assert (await conn.exec_driver_sql("PRAGMA wal_autocheckpoint")).scalar() == autocheckpoint
    await db.checkpoint()
    size_before = database_file.stat().st_size
    async with db.write() as conn:
        await conn.execute(
            sa.text("INSERT INTO big VALUES (:payload)"),
            [{"payload": bytes(3000)} for _ in range(2000)],
        )
    assert database_file.stat().st_size == size_before  # all of it still in the WAL
    # The checkpoint says how many pages (frames) the WAL held: its pace follows them.
    assert await db.checkpoint() > 2000 * 3000 // 4096
    assert database_file.stat().st_size > size_before + 2000 * 3000
    async with db.read() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM big"))).scalar() == 2000


async def test_a_long_wal_is_checkpointed_again_with_writes_held(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the WAL is CHECKPOINT_RESTART_FRAMES long, the job checkpoints a second time
    with the process's writes held, so that what the first pass could not copy is copied
    and the next write transaction starts the WAL over; a shorter WAL gets one pass."""
    real_pass = sqlite_dialect._checkpoint_pass
    real_sync = sqlite_dialect.sync_database_file
    passes: list[bool] = []  # each pass: whether this process's writes were held
    syncs: list[tuple[int, bool]] = []  # each sync: passes before it, writes held
    lock = db._write_lock
    assert lock is not None

    def sync_database_file(path: str) -> None:
        syncs.append((len(passes), lock.locked()))
        real_sync(path)

    async with db.write() as conn:
        await conn.execute(sa.text("CREATE TABLE big (payload BLOB)"))
    # A reader's snapshot from before the big write: the first pass cannot copy past it,
    # as under load it cannot copy what sends commit meanwhile.
    reader = sqlite3.connect(tmp_path / "hubbub.db")
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM big").fetchone() == (0,)

    async def checkpoint_pass(path: str) -> int:
        frames = await real_pass(path)
        passes.append(lock.locked())
        if len(passes) == 1:
            reader.rollback()
            reader.close()
        return frames

    monkeypatch.setattr(sqlite_dialect, "_checkpoint_pass", checkpoint_pass)
    monkeypatch.setattr(sqlite_dialect, "sync_database_file", sync_database_file)
    monkeypatch.setattr(sqlite_dialect, "CHECKPOINT_RESTART_FRAMES", 50)
    async with db.write() as conn:
        await conn.execute(
            sa.text("INSERT INTO big VALUES (:payload)"),
            [{"payload": bytes(3000)} for _ in range(100)],
        )
    assert await db.checkpoint() > 50
    assert passes == [False, True]
    # The file was synced between the passes, without the writes held.
    assert syncs == [(1, False)]
    async with db.write() as conn:
        await conn.execute(sa.text("INSERT INTO t VALUES (6)"))
    # That write started the WAL over: it is all the WAL holds now.
    assert await db.checkpoint() < 10
    assert passes == [False, True, False]
    assert syncs == [(1, False)]


async def test_a_failed_sync_still_leaves_the_held_pass(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The sync before the held pass is best effort: if it fails, the held pass (which
    syncs the file itself) still runs and the WAL still starts over."""
    real_pass = sqlite_dialect._checkpoint_pass
    lock = db._write_lock
    assert lock is not None
    held: list[bool] = []

    async def checkpoint_pass(path: str) -> int:
        held.append(lock.locked())
        return await real_pass(path)

    def failing_sync(path: str) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(sqlite_dialect, "_checkpoint_pass", checkpoint_pass)
    monkeypatch.setattr(sqlite_dialect, "sync_database_file", failing_sync)
    monkeypatch.setattr(sqlite_dialect, "CHECKPOINT_RESTART_FRAMES", 1)
    async with db.write() as conn:
        await conn.execute(sa.text("INSERT INTO t VALUES (7)"))
    assert await db.checkpoint() >= 1
    assert held == [False, True]
    assert "before the checkpoint's held pass failed" in caplog.text


def test_syncing_the_database_file_keeps_one_descriptor_open(tmp_path: Path) -> None:
    """``sync_database_file`` opens a descriptor of a file once and never closes it
    (closing one would drop SQLite's POSIX locks on the file); a file replaced at the same
    path gets a new one; a missing file is no error."""
    path = str(tmp_path / "x.db")
    sqlite_dialect.sync_database_file(path)
    assert path not in sqlite_dialect._SYNC_DESCRIPTORS
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()
    sqlite_dialect.sync_database_file(path)
    identity, first = sqlite_dialect._SYNC_DESCRIPTORS[path]
    sqlite_dialect.sync_database_file(path)
    assert sqlite_dialect._SYNC_DESCRIPTORS[path] == (identity, first)
    os.unlink(path)
    sqlite3.connect(path).execute("CREATE TABLE u (x)").connection.close()
    sqlite_dialect.sync_database_file(path)
    _, second = sqlite_dialect._SYNC_DESCRIPTORS[path]
    assert second != first
    os.fstat(first)  # still open
    assert os.fstat(second).st_ino == os.stat(path).st_ino


async def test_read_connections_are_kept_between_transactions(db: Database) -> None:
    """A read transaction takes the connection the last one gave back: no checkout from
    SQLAlchemy's pool and no close (``db/reader_pool.py``); the pool's bound holds, a
    transaction past it waits for the next connection given back, first come first
    served, and a connection that cannot be reused is closed and its place freed."""
    kept = db.reader_pool
    assert kept is not None
    async with db.read() as conn:
        first = await conn.get_raw_connection()
    async with db.read() as conn:
        assert await conn.get_raw_connection() is first
        assert kept.in_use == 1
    assert kept.in_use == 0 and kept.opened == 1

    kept.limit = 2
    order: list[str] = []
    release = asyncio.Event()

    async def hold(name: str) -> None:
        async with db.read() as conn:
            order.append(name)  # in the order the connections were handed out
            await conn.execute(sa.text("SELECT count(*) FROM t"))
            await release.wait()

    holders = [asyncio.create_task(hold(name)) for name in ("a", "b")]
    await asyncio.sleep(0.05)
    assert kept.opened == 2 and kept.in_use == 2
    waiting = [asyncio.create_task(hold(name)) for name in ("c", "d", "e")]
    await asyncio.sleep(0.05)
    assert order == ["a", "b"] and kept.opened == 2
    # A waiter that leaves (its request cancelled) passes its turn on.
    waiting[0].cancel()
    release.set()
    await asyncio.gather(*holders, *waiting[1:])
    assert order == ["a", "b", "d", "e"] and kept.opened == 2 and kept.in_use == 0

    # A transaction that waits too long fails as the pool's wait did.
    kept.timeout = 0.05
    blocked = asyncio.Event()
    release.clear()
    holders = [asyncio.create_task(hold(name)) for name in ("f", "g")]
    await asyncio.sleep(0.05)
    with pytest.raises(TimeoutError):
        async with db.read():
            blocked.set()
    assert not blocked.is_set()
    release.set()
    await asyncio.gather(*holders)
    assert kept.in_use == 0

    # An invalidated connection is closed, and its place goes to the next transaction.
    with pytest.raises(sa.exc.SQLAlchemyError):
        async with db.read() as conn:
            await conn.invalidate()
            await conn.execute(sa.text("SELECT 1"))
    assert kept.opened == 1 and kept.in_use == 0
    async with db.read() as conn:
        assert (await conn.execute(sa.text("SELECT count(*) FROM t"))).scalar() == 3
    await db.dispose()
    assert kept.opened == 0 and kept.idle == []


def test_checkpoint_pace_follows_the_logs_growth() -> None:
    """Each checkpoint is meant to find about CHECKPOINT_TARGET_FRAMES frames: the delay
    shrinks as the WAL grows faster, down to the minimum, and grows back to the interval."""
    target = sqlite_dialect.CHECKPOINT_TARGET_FRAMES
    shortest = sqlite_dialect.CHECKPOINT_MIN_INTERVAL_SECONDS
    longest = sqlite_dialect.CHECKPOINT_INTERVAL_SECONDS
    assert longest == 1.0 and shortest == 0.25
    delay = sqlite_dialect.checkpoint_delay
    assert delay(0, 1.0) == longest  # nothing written
    assert delay(target, 1.0) == longest
    assert delay(2 * target, 1.0) == pytest.approx(0.5)
    assert delay(100 * target, 1.0) == shortest
    assert delay(target, 0.5) == pytest.approx(0.5)  # the pace held
    assert delay(target // 2, 0.5) == longest  # slower again
    assert delay(target // 4, 0.25) == longest


async def test_checkpoint_runs_come_sooner_while_the_log_grows_fast(db: Database) -> None:
    """The server's checkpoint job: its waits follow what each checkpoint found, and a
    failing checkpoint is logged and does not stop it."""
    found: list[int | Exception] = [40_000, 40_000, RuntimeError("disk"), 1_000, 2_000]
    waits: list[float] = []

    async def checkpoint() -> int:
        result = found.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        if not found:
            raise asyncio.CancelledError

    services: Any = SimpleNamespace(db=db)
    with pytest.raises(asyncio.CancelledError):
        await run_every(1.0, checkpoint, "checkpoint", pace=checkpoint_pace(services), sleep=sleep)
    # 40,000 frames in 1 s: a tenth of a second would find 4,000, but 0.25 is the floor;
    # 40,000 again in 0.25 s: the floor; the failure counts as nothing written.
    assert waits == [1.0, 0.25, 0.25, 1.0, 1.0, 1.0]
