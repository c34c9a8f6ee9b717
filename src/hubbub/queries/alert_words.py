"""A user's alert words: words or phrases that flag a message (``has_alert_word``) when
they appear in it. They match case-insensitively."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import alert_word, user_profile


async def user_alert_words(conn: AsyncConnection, user_id: int) -> list[str]:
    """The user's alert words in the order they were added."""
    rows = await conn.execute(
        sa.select(alert_word.c.word)
        .where(alert_word.c.user_profile_id == user_id)
        .order_by(alert_word.c.id)
    )
    return list(rows.scalars())


# Built once: every send reads it (see docs/subsystems/storage.md).
_REALM_ALERT_WORDS = (
    sa.select(alert_word.c.user_profile_id, alert_word.c.word)
    .join(user_profile, user_profile.c.id == alert_word.c.user_profile_id)
    .where(alert_word.c.realm_id == sa.bindparam("realm_id"), user_profile.c.is_active)
    .order_by(alert_word.c.id)
)


async def alert_words_in_realm(conn: AsyncConnection, realm_id: int) -> dict[int, list[str]]:
    """Every active user's alert words, by user id (users without any are absent): what
    message sending needs to set ``has_alert_word``."""
    rows = await fetch_rows(conn, _REALM_ALERT_WORDS, {"realm_id": realm_id})
    words: dict[int, list[str]] = {}
    for user_id, word in rows:
        words.setdefault(user_id, []).append(word)
    return words
