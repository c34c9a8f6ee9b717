"""Per-dialect differences, one module each, chosen by ``for_name``."""

from __future__ import annotations

from collections.abc import Callable, Collection
from types import ModuleType
from typing import Any, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.base import Executable

T = TypeVar("T")
S = TypeVar("S", bound=Executable)

# The execution option of a read whose cost has no bound (a narrow's walk, a search):
# SQLite runs it in its connection's thread, every other statement inline on the event
# loop (``sqlite._Connection``); PostgreSQL ignores it.
LONG_READ = "hubbub_long_read"


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
    costs its construction and its key each time, more than a short query itself (a
    stream lookup by name: ~0.9 ms built, ~0.3 ms prebuilt, in-process on SQLite)."""

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
