"""Writing and removing entries of a user's key-value store (``/bot_storage``).

Behaviour follows Zulip 10.2: any user may keep one (zulip-bots' bots use their own);
a write may not take the total size of the store, counted as the characters of every
key and value, past ``USER_STATE_SIZE_LIMIT``; removing names that do not all exist
removes nothing. No event is sent: only the bot itself reads its store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from hubbub.db.dialects import for_name
from hubbub.db.tables import bot_storage, user_profile
from hubbub.errors import JsonableError
from hubbub.queries.bot_storage import (
    KEY_DOES_NOT_EXIST,
    entry_sizes,
    get_storage,
    key_chunks,
    storage_size,
)
from hubbub.transaction import Tx

# Zulip's USER_STATE_SIZE_LIMIT, in characters.
USER_STATE_SIZE_LIMIT = 10_000_000
# The key column's width; Zulip's keys are unbounded text.
MAX_KEY_LENGTH = 1000


def check_storage_entries(storage: Mapping[str, Any]) -> dict[str, str]:
    """The entries of a ``storage`` argument, which must map strings to strings."""
    for key, value in storage.items():
        if not isinstance(value, str):
            # Zulip names the entry by its key as JSON: storage["a"] is not a string.
            raise JsonableError(f"storage[{json.dumps(key)}] is not a string")
        if len(key) > MAX_KEY_LENGTH:
            raise JsonableError(f"Key is too long (limit: {MAX_KEY_LENGTH} characters).")
        # PostgreSQL cannot store NUL in text; SQLite would. Refuse it on both.
        if "\x00" in key or "\x00" in value:
            raise JsonableError("Storage must not contain null bytes.")
    return dict(storage)


async def _lock_owner(tx: Tx, user_id: int) -> None:
    """Serialize writes to one user's store on PostgreSQL, so that two concurrent writes
    cannot both pass the size check; SQLite has one writer at a time already."""
    await tx.conn.execute(
        sa.select(user_profile.c.id).where(user_profile.c.id == user_id).with_for_update()
    )


async def check_set_storage(tx: Tx, user_id: int, storage: Mapping[str, Any]) -> None:
    """``PUT /bot_storage``: add or replace every entry of ``storage``, or none of them."""
    entries = check_storage_entries(storage)
    if not entries:
        return
    await _lock_owner(tx, user_id)
    old_sizes = await entry_sizes(tx.conn, user_id, list(entries))
    growth = sum(len(k) + len(v) - old_sizes.get(k, 0) for k, v in entries.items())
    new_size = await storage_size(tx.conn, user_id) + growth
    if new_size > USER_STATE_SIZE_LIMIT:
        raise JsonableError(
            f"Request exceeds storage limit by {new_size - USER_STATE_SIZE_LIMIT} characters. "
            f"The limit is {USER_STATE_SIZE_LIMIT} characters."
        )
    statement = for_name(tx.conn.dialect.name).insert(bot_storage)
    statement = statement.on_conflict_do_update(
        index_elements=[bot_storage.c.bot_profile_id, bot_storage.c.key],
        set_={"value": statement.excluded.value},
    )
    await tx.conn.execute(
        statement,
        [{"bot_profile_id": user_id, "key": k, "value": v} for k, v in entries.items()],
    )


async def check_remove_storage(tx: Tx, user_id: int, keys: list[str] | None) -> None:
    """``DELETE /bot_storage``: remove the entries of ``keys`` (all when None), which must
    all exist. As in Zulip, a key named twice counts as one that is missing."""
    if keys is None:
        await tx.conn.execute(sa.delete(bot_storage).where(bot_storage.c.bot_profile_id == user_id))
        return
    if len(await get_storage(tx.conn, user_id, keys)) < len(keys):
        raise JsonableError(KEY_DOES_NOT_EXIST)
    for chunk in key_chunks(sorted(set(keys))):
        await tx.conn.execute(
            sa.delete(bot_storage).where(
                bot_storage.c.bot_profile_id == user_id, bot_storage.c.key.in_(chunk)
            )
        )
