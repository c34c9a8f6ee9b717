"""A user's key-value store (``/bot_storage``), where zulip-bots' stateful bots keep their
state. Keys and values are strings; their size is counted in characters."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import bot_storage
from hubbub.errors import JsonableError

KEY_DOES_NOT_EXIST = "Key does not exist."
# Keys per statement: far below SQLite's and asyncpg's limits on bound parameters.
_CHUNK = 500

_ENTRY_SIZE = sa.func.length(bot_storage.c.key) + sa.func.length(bot_storage.c.value)


def key_chunks(keys: Sequence[str]) -> Iterator[Sequence[str]]:
    """``keys`` in slices small enough for one statement's bound parameters."""
    for start in range(0, len(keys), _CHUNK):
        yield keys[start : start + _CHUNK]


async def get_storage(
    conn: AsyncConnection, user_id: int, keys: Sequence[str] | None = None
) -> dict[str, str]:
    """The user's entries (only those of ``keys`` when given; missing ones are left out),
    by key."""
    query = sa.select(bot_storage.c.key, bot_storage.c.value).where(
        bot_storage.c.bot_profile_id == user_id
    )
    if keys is None:
        rows = await conn.execute(query.order_by(bot_storage.c.key))
        return {key: value for key, value in rows}
    found: dict[str, str] = {}
    for chunk in key_chunks(sorted(set(keys))):
        rows = await conn.execute(query.where(bot_storage.c.key.in_(chunk)))
        found.update({key: value for key, value in rows})
    return found


async def access_storage(
    conn: AsyncConnection, user_id: int, keys: Sequence[str] | None
) -> dict[str, str]:
    """All the user's entries, or exactly those of ``keys`` (in their order), or
    ``JsonableError`` when one of them does not exist."""
    entries = await get_storage(conn, user_id, keys)
    if keys is None:
        return entries
    if any(key not in entries for key in keys):
        raise JsonableError(KEY_DOES_NOT_EXIST)
    return {key: entries[key] for key in keys}


async def storage_size(conn: AsyncConnection, user_id: int) -> int:
    """The characters of all the user's keys and values together."""
    total = (
        await conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(_ENTRY_SIZE), 0)).where(
                bot_storage.c.bot_profile_id == user_id
            )
        )
    ).scalar()
    return int(total or 0)


async def entry_sizes(conn: AsyncConnection, user_id: int, keys: Sequence[str]) -> dict[str, int]:
    """The size (key and value, in characters) of each of ``keys`` the user has."""
    sizes: dict[str, int] = {}
    for chunk in key_chunks(list(keys)):
        rows = await conn.execute(
            sa.select(bot_storage.c.key, _ENTRY_SIZE).where(
                bot_storage.c.bot_profile_id == user_id, bot_storage.c.key.in_(chunk)
            )
        )
        sizes.update({key: int(size) for key, size in rows})
    return sizes
