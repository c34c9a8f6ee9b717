"""Adding and removing a user's alert words, and the ``alert_words`` event.

Behaviour follows Zulip 8.0:
- added words are stripped and empty ones dropped; a word already set (compared
  case-insensitively) is skipped, and among new words that differ only in case the last
  spelling is kept, in the place of the first;
- removal matches case-insensitively and ignores words that are not set (removal does
  not strip: Zulip does not);
- every request, even one that changes nothing, sends the user's whole list as an
  ``alert_words`` event to the user only.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from hubbub.db.tables import alert_word
from hubbub.models import User
from hubbub.queries.alert_words import user_alert_words
from hubbub.transaction import Tx

MAX_ALERT_WORD_LENGTH = 100


def clean_alert_words(words: Iterable[str]) -> list[str]:
    stripped = (word.strip() for word in words)
    return [word for word in stripped if word]


async def _notify(tx: Tx, user: User) -> list[str]:
    words = await user_alert_words(tx.conn, user.id)
    tx.notify(user.realm_id, {"type": "alert_words", "alert_words": words}, [user.id])
    return words


async def do_add_alert_words(tx: Tx, user: User, words: Iterable[str]) -> list[str]:
    """Add the (already cleaned) words; returns the user's words afterwards."""
    existing = {word.lower() for word in await user_alert_words(tx.conn, user.id)}
    new: dict[str, str] = {}
    for word in words:
        if word.lower() not in existing:
            new[word.lower()] = word
    if new:
        await tx.conn.execute(
            sa.insert(alert_word),
            [
                {"user_profile_id": user.id, "realm_id": user.realm_id, "word": w}
                for w in new.values()
            ],
        )
    return await _notify(tx, user)


async def do_remove_alert_words(tx: Tx, user: User, words: Iterable[str]) -> list[str]:
    """Remove the words; returns the user's words afterwards. Compared in Python, so that
    case folds the same way on SQLite (whose ``lower`` is ASCII-only) and PostgreSQL."""
    doomed = {word.lower() for word in words}
    rows = await tx.conn.execute(
        sa.select(alert_word.c.id, alert_word.c.word).where(alert_word.c.user_profile_id == user.id)
    )
    ids = [row_id for row_id, word in rows if word.lower() in doomed]
    if ids:
        await tx.conn.execute(sa.delete(alert_word).where(alert_word.c.id.in_(ids)))
    return await _notify(tx, user)


async def check_add_alert_words(tx: Tx, user: User, words: list[str]) -> list[str]:
    """``POST /users/me/alert_words`` (the length limit is checked on the raw words)."""
    return await do_add_alert_words(tx, user, clean_alert_words(words))
