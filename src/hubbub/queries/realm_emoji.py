"""A realm's custom emoji: the objects clients see, and the lookups by name and id.

Deactivated emoji stay listed (old messages, reactions and statuses still show them);
only active ones can be used anew, and a name belongs to at most one active emoji.
"""

from __future__ import annotations

from typing import Any, TypedDict

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.fast import fetch_rows
from hubbub.db.tables import realm_emoji
from hubbub.markdown.context import RealmEmoji

# Where the files live in the upload store, and (under /user_avatars/) where they are
# served, as in Zulip: "<realm id>/emoji/images/<file>", the still of an animated emoji
# at "<realm id>/emoji/images/still/<file without extension>.png".
EMOJI_PATH = "{realm_id}/emoji/images/{file_name}"
STILL_PATH = "{realm_id}/emoji/images/still/{stem}.png"
URL_PREFIX = "/user_avatars/"


class RealmEmojiDict(TypedDict):
    """One custom emoji as the API shows it (``still_url`` since feature level 113)."""

    id: str
    name: str
    source_url: str
    still_url: str | None
    deactivated: bool
    author_id: int | None


def emoji_path_id(realm_id: int, file_name: str, *, still: bool = False) -> str:
    if still:
        stem = file_name.rsplit(".", 1)[0]
        return STILL_PATH.format(realm_id=realm_id, stem=stem)
    return EMOJI_PATH.format(realm_id=realm_id, file_name=file_name)


def emoji_url(realm_id: int, file_name: str, *, still: bool = False) -> str:
    """The image's URL, relative to the realm's."""
    return URL_PREFIX + emoji_path_id(realm_id, file_name, still=still)


# Built once: every send of a message with ":name:" in it reads the active ones.
_REALM_EMOJI = (
    sa.select(
        realm_emoji.c.id,
        realm_emoji.c.name,
        realm_emoji.c.file_name,
        realm_emoji.c.author_id,
        realm_emoji.c.deactivated,
        realm_emoji.c.is_animated,
    )
    .where(
        realm_emoji.c.realm_id == sa.bindparam("realm_id"),
        # A row without a file is one whose upload has not finished.
        realm_emoji.c.file_name.is_not(None),
    )
    .order_by(realm_emoji.c.id)
)
_ACTIVE_REALM_EMOJI = (
    sa.select(realm_emoji.c.id, realm_emoji.c.name, realm_emoji.c.file_name)
    .where(
        realm_emoji.c.realm_id == sa.bindparam("realm_id"),
        realm_emoji.c.file_name.is_not(None),
        ~realm_emoji.c.deactivated,
    )
    .order_by(realm_emoji.c.id)
)


def _emoji_dict(realm_id: int, row: Any) -> RealmEmojiDict:
    emoji_id, name, file_name, author_id, deactivated, is_animated = row
    return RealmEmojiDict(
        id=str(emoji_id),
        name=name,
        source_url=emoji_url(realm_id, file_name),
        still_url=emoji_url(realm_id, file_name, still=True) if is_animated else None,
        deactivated=bool(deactivated),
        author_id=author_id,
    )


async def realm_emoji_dicts(conn: AsyncConnection, realm_id: int) -> dict[str, RealmEmojiDict]:
    """Every custom emoji of the realm, deactivated ones too, keyed by id (as a string)."""
    rows = await fetch_rows(conn, _REALM_EMOJI, {"realm_id": realm_id})
    return {str(row[0]): _emoji_dict(realm_id, row) for row in rows}


async def active_render_emoji(conn: AsyncConnection, realm_id: int) -> list[RealmEmoji]:
    """The realm's active custom emoji, as the Markdown renderer takes them."""
    rows = await fetch_rows(conn, _ACTIVE_REALM_EMOJI, {"realm_id": realm_id})
    return [
        RealmEmoji(id=str(emoji_id), name=name, source_url=emoji_url(realm_id, file_name))
        for emoji_id, name, file_name in rows
    ]


async def get_active_emoji_by_name(conn: AsyncConnection, realm_id: int, name: str) -> Any | None:
    """The realm's active custom emoji named ``name`` (a row), or None."""
    return (
        await conn.execute(
            sa.select(realm_emoji).where(
                realm_emoji.c.realm_id == realm_id,
                realm_emoji.c.name == name,
                realm_emoji.c.file_name.is_not(None),
                ~realm_emoji.c.deactivated,
            )
        )
    ).first()


async def get_emoji_by_code(conn: AsyncConnection, realm_id: int, code: str) -> Any | None:
    """The realm's custom emoji whose id is ``code`` (deactivated or not), or None. The
    code must be the id exactly as the emoji's key spells it ("7", not "07")."""
    if not code.isascii() or not code.isdigit() or len(code) > 18 or str(int(code)) != code:
        return None
    return (
        await conn.execute(
            sa.select(realm_emoji).where(
                realm_emoji.c.realm_id == realm_id,
                realm_emoji.c.id == int(code),
                realm_emoji.c.file_name.is_not(None),
            )
        )
    ).first()
