"""PostgreSQL via asyncpg: a connection pool; row locks serialize contended writes."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from hubbub.db.dialects import settle_in_slices
from hubbub.db.tables import user_message_rows, user_message_staged
from hubbub.db.writer_lock import WriterLock

if TYPE_CHECKING:
    from hubbub.db.engine import Database

# pool_timeout: a burst queues for a connection rather than failing after 30 s.
# No overflow: SQLAlchemy closes an overflow connection when it is returned, so bursts of
# more than pool_size transactions opened connections again and again, each a server
# process preparing every statement anew; twenty that stay open hold the same maximum.
# No pool_pre_ping: SQLAlchemy's ping of an asyncpg connection is three round trips
# (BEGIN, an empty query, ROLLBACK) on every checkout, six of a stream send's 21 (see
# ``_check_open``, which catches the common case without any).
ENGINE_KWARGS: dict[str, Any] = {
    "pool_size": 20,
    "max_overflow": 0,
    "pool_timeout": 300,
}
SERIALIZE_WRITES = False
# A database that stops answering (a cut network drops packets rather than refusing) must
# not hold each request for asyncpg's default minute: it gets a 503 after this long.
CONNECT_TIMEOUT_SECONDS = 5
# PostgreSQL checkpoints by itself (its checkpointer process): no background job.
CHECKPOINT_INTERVAL_SECONDS: float | None = None


# PostgreSQL compiles a query to machine code (JIT) once its estimated cost passes
# jit_above_cost; a narrow on a user's rows of a 33-million-row user_message table is
# estimated that high even when an index answers it at once, and compiling took longer
# than running such a query. Our queries are short; the compilation never pays for
# itself.
SERVER_SETTINGS = {"jit": "off"}


# Reads run without BEGIN and COMMIT: at READ COMMITTED every statement takes its own
# snapshot anyway, so a read transaction only cost two round trips (the credentials check
# of every request is one statement).
READ_EXECUTION_OPTIONS: dict[str, Any] = {"isolation_level": "AUTOCOMMIT"}


def create_engine(url: str) -> AsyncEngine:
    """PostgreSQL's defaults, but without JIT compilation."""
    engine = create_async_engine(
        url,
        connect_args={"server_settings": SERVER_SETTINGS, "timeout": CONNECT_TIMEOUT_SECONDS},
        **ENGINE_KWARGS,
    )
    sa.event.listen(engine.sync_engine, "checkout", _check_open)
    return engine


def _check_open(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Refuse a pooled connection whose socket has closed (the server restarted or ended
    the session): the pool then opens a new one instead of failing the request. A socket
    that died without closing is still found by the first statement, whose disconnect
    error makes SQLAlchemy drop the pool's other connections too."""
    if dbapi_connection.driver_connection.is_closed():
        raise sa_exc.DisconnectionError("the connection was closed by the server")


# Closing a connection suspends: asyncpg's resets itself on return to the pool, over the
# network.
CLOSES_INLINE = False


def create_write_engine(url: str) -> AsyncEngine | None:
    """Writes share the pool with reads."""
    del url
    return None


def insert(table: sa.Table) -> Any:
    return pg_insert(table)


_INSERT_MESSAGE: dict[tuple[str, ...], sa.TextClause] = {}


def _insert_message_statement(columns: tuple[str, ...]) -> sa.TextClause:
    """The message and its rows in one statement (one round trip, not two): the rows'
    insert reads the message's id from the first insert's RETURNING. The recipients come
    as two arrays: an executemany sends a big stream's 1,000 rows one by one. The rows are
    staged (migration 0021), appended to the staged table's message-major key."""
    statement = _INSERT_MESSAGE.get(columns)
    if statement is None:
        names = ", ".join(columns)
        params = ", ".join(f":{name}" for name in columns)
        statement = sa.text(
            f"WITH new_message AS (INSERT INTO message ({names}) VALUES ({params}) RETURNING id), "
            "rows AS (INSERT INTO user_message_staged (user_profile_id, message_id, flags) "
            "SELECT recipient, (SELECT id FROM new_message), bits "
            "FROM unnest(:user_ids, :flags) AS r(recipient, bits)) "
            "SELECT id FROM new_message"
        ).bindparams(
            sa.bindparam("user_ids", type_=ARRAY(sa.Integer)),
            sa.bindparam("flags", type_=ARRAY(sa.BigInteger)),
        )
        _INSERT_MESSAGE[columns] = statement
    return statement


async def insert_message(
    conn: AsyncConnection, values: dict[str, Any], flags: dict[int, int]
) -> int:
    """A new message (``values``: its columns) and its user_message rows, one per
    recipient (``flags``: user id -> bits); returns its id."""
    statement = _insert_message_statement(tuple(values))
    params = {**values, "user_ids": list(flags), "flags": list(flags.values())}
    return int((await conn.execute(statement, params)).scalar_one())


def in_ids(column: sa.ColumnElement[int], key: str) -> sa.ColumnElement[bool]:
    """``column = ANY`` the array of parameter ``key`` (``ids_argument``), for a list that
    may be long: one argument, and one prepared statement whatever the list's length (an
    expanded IN list is a new one per length)."""
    return column == sa.any_(sa.bindparam(key, type_=ARRAY(column.type)))


def ids_argument(ids: Collection[Any]) -> list[Any]:
    return sorted(ids)


# user_message is a view of two tables (migration 0021), as on SQLite (0019). Writes name
# the staged table first: a flag change or a deletion that ran over the user-major rows
# first could miss a row that a concurrent move took out of the staged table after that
# statement's snapshot and before the next's. Staged first, a row the move is taking
# makes the statement wait for the move and skip it (READ COMMITTED re-checks a row
# locked meanwhile), and the next statement, with a later snapshot, finds it moved; a row
# the statement changed first is moved with its change, once the statement's
# transaction commits.
USER_MESSAGE_TABLES = (user_message_staged, user_message_rows)
USER_MESSAGE_SETTLED = user_message_rows

# How often the server moves staged rows (``settle_staged``). PostgreSQL's work is per row
# more than per page: moving a second of the send flood's rows in user order costs less
# than inserting them straight into the user-major table did, and none of it inside a
# send (bench/results/postgresql.md).
SETTLE_INTERVAL_SECONDS: float | None = 1.0
# Users per transaction of a move: a flag change of a row being moved waits for the
# slice's COMMIT, so a slice is kept short.
SETTLE_USERS_PER_TRANSACTION = 100
# One worker at a time moves the rows (an advisory lock's key: "hubbub settle"); the
# others find the lock taken and leave that second's move to it.
_SETTLE_LOCK = 0x6875627365746C

_MOVE = (
    "WITH moved AS (DELETE FROM user_message_staged WHERE {where}"
    " RETURNING user_profile_id, message_id, flags)"
    " INSERT INTO user_message_rows (user_profile_id, message_id, flags)"
    " SELECT user_profile_id, message_id, flags FROM moved"
    " ORDER BY user_profile_id, message_id"
    # A row found in both tables (it should not be) takes the staged flags, so that the
    # staged table cannot keep a row for good.
    " ON CONFLICT (user_profile_id, message_id) DO UPDATE SET flags = excluded.flags"
)
_MOVE_USERS = _MOVE.format(where="user_profile_id BETWEEN $1 AND $2 AND message_id <= $3")
_MOVE_MESSAGES = _MOVE.format(where="message_id = ANY($1::int[])")


async def settle_messages(conn: AsyncConnection, message_ids: Collection[int]) -> None:
    """Move these messages' staged rows into user_message_rows, in ``conn``'s write
    transaction: before rows are added for them there (``dialects.user_message_settled``)."""
    if message_ids:
        await conn.exec_driver_sql(_MOVE_MESSAGES, (sorted(message_ids),))


_HOLD_OFF_SETTLING = "SELECT pg_advisory_xact_lock_shared($1)"


async def hold_off_settling(conn: AsyncConnection) -> None:
    """Wait for a move under way, and keep the next out until ``conn``'s transaction ends
    (``settle_staged`` only tries the lock, so it waits for nothing, and takes no staged
    row before it has the lock). A move takes a slice's rows user by user; a write of
    several messages' rows (a topic's deletion, a move of messages) takes them message by
    message: each could hold a row that the other waits for, and PostgreSQL would end one
    of them after a second (its deadlock check)."""
    await conn.exec_driver_sql(_HOLD_OFF_SETTLING, (_SETTLE_LOCK,))


async def has_staged_rows(conn: AsyncConnection, user_id: int) -> bool:
    """Whether to leave the staged table out of a statement (``over_tables``, which
    PostgreSQL does not need): it plans the view's two tables itself."""
    del conn, user_id
    return False


def over_tables(statement: Any, *, staged: bool = True) -> Any:
    """PostgreSQL plans a statement over the view as one over each table (an append of
    both, merged in order where the statement orders): the statement as it is."""
    del staged
    return statement


async def settle_staged(db: Database) -> int:
    """Move every row staged so far into user_message_rows, SETTLE_USERS_PER_TRANSACTION
    users per transaction, then vacuum the staged table (its rows are all dead a second
    after they were written, sooner than autovacuum looks); the number of rows moved.
    Rows staged meanwhile wait for the next call; while another worker moves rows, none.
    The lock is a transaction's, so that nothing can leave it held (a session's would
    stay with a pooled connection whose unlock failed)."""
    async with db.engine.connect() as lock, lock.begin():
        taken = await lock.exec_driver_sql("SELECT pg_try_advisory_xact_lock($1)", (_SETTLE_LOCK,))
        if not taken.scalar():
            return 0
        moved = await _move_staged(db)
    if moved:
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM user_message_staged")
    return moved


async def _move_staged(db: Database) -> int:
    async def move(conn: AsyncConnection, first: int, last: int, newest: int) -> int:
        result = await conn.exec_driver_sql(_MOVE_USERS, (first, last, newest))
        return int(result.rowcount)

    return await settle_in_slices(db, SETTLE_USERS_PER_TRANSACTION, move)


async def refresh_statistics(conn: AsyncConnection) -> None:
    """Nothing to do: PostgreSQL's autovacuum keeps planner statistics current."""
    del conn


async def checkpoint(url: str, write_lock: WriterLock | None) -> int:
    """Nothing to do: see CHECKPOINT_INTERVAL_SECONDS."""
    del url, write_lock
    return 0


async def own_checkpoints(conn: AsyncConnection) -> None:
    """Nothing to do: PostgreSQL's own checkpointer checkpoints."""
    del conn


def checkpoint_delay(frames: int, last_delay: float) -> float:
    """Never asked (no checkpoint job): the last delay again."""
    del frames
    return last_delay
