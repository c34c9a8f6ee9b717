"""SQLite's staged ``user_message`` rows: a send's rows go into ``user_message_staged``
(keyed message-major, so a big send appends to a few pages), and ``settle_staged`` moves
them into ``user_message_rows`` (keyed user-major) a slice of users at a time, each
recipient's leaf written once for every message staged since the last move. Reads see
both through the ``user_message`` view (tables.py, migration 0019)."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors

from hubbub.db.dialects import WHOLE_VIEW, settle_in_slices
from hubbub.db.tables import user_message, user_message_rows, user_message_staged

if TYPE_CHECKING:
    from hubbub.db.engine import Database

USER_MESSAGE_TABLES = (user_message_rows, user_message_staged)
USER_MESSAGE_SETTLED = user_message_rows

# How often the server moves staged rows (``settle_staged``). Each move writes one leaf
# per user with staged rows, whatever the number of their rows: a second of a flood of
# sends (10 sends a second to 1,000 subscribers) is ~1,000 leaves once instead of ~10,000.
# Longer would save more page writes and leave more rows for every read to look up in
# the staged table as well.
SETTLE_INTERVAL_SECONDS: float | None = 1.0
# Users per write transaction of a move, so that sends wait for a slice, not for the
# whole move. Under a flood of sends every user has rows staged each second, and a send
# that comes in behind a slice waits for all of it and for the sends queued meanwhile;
# smaller slices hold the writer for less at a time, for the same share of its time
# overall, since their COMMITs come more often (bench/results/sqlite-connections.md,
# *Sends rendered before the writer, and shorter slices*).
SETTLE_USERS_PER_TRANSACTION = 50
# The staged table's planner statistics (``sqlite_stat1``), whatever it held when ANALYZE
# last ran: a few rows per user, so that a statement over it starts from its user index,
# never from the messages. Empty at that moment, it would have none, and SQLite would
# take it for a big table; full, for one larger than it mostly is.
STAGED_STATISTICS = (
    ("user_message_staged", "user_message_staged", "2000 200 1"),
    ("user_message_staged", "ix_user_message_staged_user", "2000 2 1 1"),
)

INSERT_STAGED = (
    "INSERT INTO user_message_staged (message_id, user_profile_id, flags) VALUES (?, ?, ?)"
)
# A row found in both tables (it should not be) takes the staged flags: a move that failed
# on it would leave the staged table growing for good.
_MOVE = (
    "INSERT INTO user_message_rows (user_profile_id, message_id, flags)"
    " SELECT user_profile_id, message_id, flags FROM user_message_staged"
    " WHERE {where} ORDER BY user_profile_id, message_id"
    " ON CONFLICT (user_profile_id, message_id) DO UPDATE SET flags = excluded.flags"
)
_DELETE = "DELETE FROM user_message_staged WHERE {where}"
_USERS_WHERE = "user_profile_id BETWEEN ? AND ? AND message_id <= ?"
_MESSAGES_WHERE = "message_id IN (SELECT value FROM json_each(?))"


_UNPIN_STAGED_STATISTICS = "DELETE FROM sqlite_stat1 WHERE tbl = 'user_message_staged'"
_PIN_STAGED_STATISTICS = "INSERT INTO sqlite_stat1 VALUES (?, ?, ?)"


def pin_staged_statistics(connection: sqlite3.Connection) -> None:
    """Replace the staged table's planner statistics by STAGED_STATISTICS (after ANALYZE,
    in its transaction; new connections read them)."""
    connection.execute(_UNPIN_STAGED_STATISTICS).close()
    connection.executemany(_PIN_STAGED_STATISTICS, STAGED_STATISTICS).close()


def _move(connection: sqlite3.Connection, where: str, values: Sequence[Any]) -> int:
    """Move the staged rows ``where`` holds into user_message_rows; how many."""
    connection.execute(_MOVE.format(where=where), values).close()
    cursor = connection.execute(_DELETE.format(where=where), values)
    try:
        return cursor.rowcount
    finally:
        cursor.close()


async def _move_on(
    conn: AsyncConnection, where: str, values: Sequence[Any], *, commit: bool = False
) -> int:
    """``_move`` in ``conn``'s write transaction, in the writer's thread: two statements
    that each run in one step of SQLite, without the interpreter's lock, beside the
    event loop. With ``commit``, the transaction's COMMIT follows them there, in the same
    trip to the thread: the writer is then held for one turn of the loop to come back,
    not two (the block's own COMMIT finds nothing left to end)."""
    from hubbub.db.dialects.sqlite import driver_of

    moved: list[int] = []

    def work(connection: sqlite3.Connection) -> None:
        moved.append(_move(connection, where, values))
        if commit:
            connection.commit()

    await driver_of(conn).run_in_thread(work)
    return moved[0]


async def settle_messages(conn: AsyncConnection, message_ids: Collection[int]) -> None:
    """Move these messages' staged rows into user_message_rows, in ``conn``'s write
    transaction: before rows are added for them there, whose key must see every row of
    the pair (``dialects.user_message_settled``)."""
    if message_ids:
        await _move_on(conn, _MESSAGES_WHERE, (json.dumps(sorted(message_ids)),))


async def hold_off_settling(conn: AsyncConnection) -> None:
    """Nothing to do: a move of staged rows is a write transaction, and SQLite's single
    writer runs one at a time."""
    del conn


async def settle_staged(db: Database) -> int:
    """Move every row staged so far into user_message_rows (``settle_in_slices``), each
    slice's move and COMMIT in one trip to the writer's thread; the number moved."""

    async def move(conn: AsyncConnection, first: int, last: int, newest: int) -> int:
        return await _move_on(conn, _USERS_WHERE, (first, last, newest), commit=True)

    return await settle_in_slices(db, SETTLE_USERS_PER_TRANSACTION, move)


# Statements over the view. SQLite reads ``user_message`` well where a statement's arms can
# each be planned alone (a key look-up, an ``IN`` list), but a view of a UNION ALL cannot
# be merged into a query that joins it and orders or limits the join, nor into an outer
# join: it then collects all of the user's rows first, many times the cost of the
# statement on the user-major table alone. So a
# statement with an inner join runs over each table in turn, as one statement
# (``over_tables``: the same plan as before on the user-major table, and a short one on
# the staged rows, their results one after the other, which the caller merges); a
# narrow with stream history looks each message's row up instead of joining
# (``NarrowQuery._own_flags``).


# The execution option that runs a statement over the tables of the rows rather than the
# view (``over_tables``), and what its SQL's mentions of the view become: SQLAlchemy names
# the view's columns by the view's name (``user_message.flags``), so the table takes the
# view's name as its alias there; an alias of the view (``user_message AS own``) becomes
# one of the table. Its value: one table's name, or ``BOTH_TABLES``. Rewriting the
# compiled text is cheap; rebuilding the statement with SQLAlchemy's
# ``replacement_traverse`` cost more than the page's query itself.
TABLE_OPTION = "hubbub_user_message_table"
BOTH_TABLES = "*"
_VIEW_MENTION = re.compile(r"\buser_message\b(?![._])( AS )?")


# Kept per SQL text: the engine's hook would otherwise rewrite every execution's SQL,
# while SQLAlchemy compiles a statement's SQL only once.
@functools.lru_cache(maxsize=512)
def on_table(sql: str, table: str) -> str:
    """``sql``, compiled from a statement over the view, over ``table`` instead; over
    each table in turn for ``BOTH_TABLES``, the same statement twice in a UNION ALL of
    two subqueries, each ordered and limited as the statement is, so that SQLite plans
    each alone (its parameters twice over: ``doubled``)."""
    if table == BOTH_TABLES:
        rows, staged = (on_table(sql, t.name) for t in USER_MESSAGE_TABLES)
        return f"SELECT * FROM ({rows}) UNION ALL SELECT * FROM ({staged})"
    return _VIEW_MENTION.sub(
        lambda found: f"{table} AS " if found.group(1) else f"{table} AS user_message", sql
    )


def doubled(parameters: Sequence[Any]) -> tuple[Any, ...]:
    """A statement's positional parameters for its SQL ``on_table(..., BOTH_TABLES)``."""
    return (*parameters, *parameters)


def over_tables(statement: Any, *, staged: bool = True) -> Any:
    """``statement`` over the tables that hold ``user_message``'s rows (``TABLE_OPTION``),
    its rows the user-major table's then the staged table's (or the first's alone, with
    ``staged`` false: a user without staged rows). For a statement whose mentions of
    ``user_message`` are all one user's row of one message (a narrow's inner join, its
    ``own`` matches; an aggregate of one user's rows): each row is in one table, so the
    results together are the statement's over the view, for the caller to merge (a
    page's two pages sorted and cut, two maximums' larger). (A statement that does not
    read the view, or marked ``WHOLE_VIEW``, as it is.) One statement rather than one a
    table: a statement's run costs the event loop more than the staged table's few rows
    cost SQLite (bench/results/sqlite-user-message.md)."""
    if not _reads_view(statement):
        return statement
    table = BOTH_TABLES if staged else USER_MESSAGE_SETTLED.name
    return statement.execution_options(**{TABLE_OPTION: table})


_USER_STAGED = (
    sa.select(sa.literal(1))
    .select_from(user_message_staged)
    .where(user_message_staged.c.user_profile_id == sa.bindparam("user_id"))
    .limit(1)
)


async def has_staged_rows(conn: AsyncConnection, user_id: int) -> bool:
    from hubbub.db.fast import fetch_value

    return await fetch_value(conn, _USER_STAGED, {"user_id": user_id}) is not None


def _reads_view(statement: Any) -> bool:
    """Whether ``statement`` reads the view in a way that needs one run per table (not
    one marked ``WHOLE_VIEW``)."""
    if statement.get_execution_options().get(WHOLE_VIEW):
        return False
    return any(element is user_message for element in visitors.iterate(statement))
