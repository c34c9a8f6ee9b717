"""Per-dialect differences, one module each, chosen by ``for_name``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

if TYPE_CHECKING:
    from hubbub.db.engine import Database

T = TypeVar("T")
S = TypeVar("S", bound=Executable)

# The execution option of a read whose cost has no bound (a narrow's walk, a search):
# SQLite runs it in its connection's thread, every other statement inline on the event
# loop (``sqlite._Connection``); PostgreSQL ignores it.
LONG_READ = "hubbub_long_read"
# The execution option of a statement that reads SQLite's user_message view well as it
# is: ``over_user_message`` leaves it whole (``sqlite_staged``).
WHOLE_VIEW = "hubbub_user_message_whole"


def long_read(statement: S) -> S:
    """``statement``, marked as a read that may take long (``LONG_READ``)."""
    return statement.execution_options(**{LONG_READ: True})


def for_name(name: str) -> ModuleType:
    if name == "sqlite":
        from hubbub.db.dialects import sqlite

        return sqlite
    if name == "postgresql":
        from hubbub.db.dialects import postgresql

        return postgresql
    raise ValueError(f"unsupported database dialect: {name}")


class PerDialect(Generic[T]):
    """A statement built once per dialect, for one that differs between them (``in_ids``).

    SQLAlchemy keeps a statement's cache key with the statement: one built for every call
    costs its construction and its key each time, more than a short query itself."""

    def __init__(self, build: Callable[[ModuleType], T]) -> None:
        self._build = build
        self._built: dict[str, T] = {}

    def __call__(self, conn: AsyncConnection) -> T:
        name = conn.dialect.name
        statement = self._built.get(name)
        if statement is None:
            statement = self._built[name] = self._build(for_name(name))
        return statement


def ids_argument(conn: AsyncConnection, ids: Collection[Any]) -> Any:
    """The value of an ``in_ids`` parameter on ``conn``'s database (ids, or strings such
    as lower-cased names)."""
    return for_name(conn.dialect.name).ids_argument(ids)


def user_message_tables(conn: AsyncConnection) -> tuple[sa.Table, ...]:
    """The tables that hold ``user_message``'s rows, for an UPDATE or DELETE of them (each
    statement once per table, in this order): ``user_message`` is a view that reads take
    as it is, of ``tables.user_message_rows`` and ``tables.user_message_staged``
    (migrations 0019 and 0021; PostgreSQL names the staged table first, see there)."""
    tables: tuple[sa.Table, ...] = for_name(conn.dialect.name).USER_MESSAGE_TABLES
    return tables


def user_message_settled(conn: AsyncConnection) -> sa.Table:
    """Where a ``user_message`` row made outside a send goes (a historical row, a moved
    message's new subscriber): the table keyed by (user, message), whose key refuses a
    second row for the pair. The caller has made sure that no staged row exists for it
    (it read ``user_message``, or ``settle_messages`` moved them)."""
    table: sa.Table = for_name(conn.dialect.name).USER_MESSAGE_SETTLED
    return table


async def settle_messages(conn: AsyncConnection, message_ids: Collection[int]) -> None:
    """Move these messages' staged rows into ``user_message_settled``, in ``conn``'s write
    transaction."""
    await for_name(conn.dialect.name).settle_messages(conn, message_ids)


def over_user_message(conn: AsyncConnection, statement: S, *, staged: bool = True) -> S:
    """``statement`` as it runs on ``conn``'s database: itself on PostgreSQL; on SQLite,
    where it joins the view, over each table of ``user_message``'s rows in turn, their
    results one after the other (``sqlite_staged.over_tables``: the caller merges them,
    a row per group and table for an aggregate; ``staged`` false leaves out the staged
    table, for a user ``has_staged_rows`` says has none)."""
    found: S = for_name(conn.dialect.name).over_tables(statement, staged=staged)
    return found


async def hold_off_settling(conn: AsyncConnection) -> None:
    """Keep moves of staged rows out until ``conn``'s write transaction ends, before it
    writes the staged rows of several messages (PostgreSQL; SQLite's single writer
    already does): a move locks rows user by user, such a write message by message, and
    each could hold a row the other waits for."""
    await for_name(conn.dialect.name).hold_off_settling(conn)


async def has_staged_rows(conn: AsyncConnection, user_id: int) -> bool:
    """Whether a statement over the user's rows must read the staged table as well (SQLite;
    on PostgreSQL, which plans the view's two tables itself, never asked to leave it out:
    false)."""
    found: bool = await for_name(conn.dialect.name).has_staged_rows(conn, user_id)
    return found


# Each user's newest staged message, in user order (the staged table's user index).
STAGED_USERS = (
    "SELECT user_profile_id, max(message_id) FROM user_message_staged"
    " GROUP BY user_profile_id ORDER BY user_profile_id"
)
# Moves one slice's staged rows in its write transaction: (connection, first user, last
# user, newest message) -> the number of rows moved.
MoveSlice = Callable[[AsyncConnection, int, int, int], Awaitable[int]]


async def settle_in_slices(db: Database, users_per_transaction: int, move: MoveSlice) -> int:
    """Move every row staged so far into user_message_rows (both dialects'
    ``settle_staged``), ``users_per_transaction`` users per write transaction; the number
    of rows moved. Rows staged meanwhile (newer messages) wait for the next call. Each
    slice is atomic: a read sees a user's rows in one table or the other, never both or
    neither."""
    async with db.read() as conn:
        staged: list[Any] = list(await conn.exec_driver_sql(STAGED_USERS))
    if not staged:
        return 0
    newest = max(row[1] for row in staged)
    users = [row[0] for row in staged]
    moved = 0
    for start in range(0, len(users), users_per_transaction):
        part = users[start : start + users_per_transaction]
        async with db.write(background=True) as conn:
            moved += await move(conn, part[0], part[-1], newest)
    return moved
