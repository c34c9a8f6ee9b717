"""Adding and deactivating a realm's custom emoji, and the ``realm_emoji`` events.

Behaviour follows Zulip 10.2:
- adding needs a member (not a guest, not a bot) in the realm's
  ``can_add_custom_emoji_group``; the name is stripped and its spaces become
  underscores, then it must be lowercase letters, digits, dashes and underscores, ending
  with a letter or digit; a name in use by an active custom emoji is refused; a built-in
  emoji's name only for administrators, whose emoji then overrides it;
- deactivating is for administrators and the emoji's author; the emoji stays listed
  (``deactivated``), so old messages and reactions still show it, and its name is free;
- every change sends the realm's whole emoji dict to every active user.
"""

from __future__ import annotations

import re
import secrets

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.actions.user_groups import check_member_or_admin
from hubbub.db.tables import realm_emoji
from hubbub.errors import JsonableError
from hubbub.markdown.emoji import code_for_name
from hubbub.models import Realm, User
from hubbub.permissions import user_has_permission
from hubbub.queries.realm_emoji import get_active_emoji_by_name, realm_emoji_dicts
from hubbub.queries.users import list_active_users
from hubbub.transaction import Tx

# Zulip's MAX_EMOJI_FILE_SIZE_MIB default.
MAX_EMOJI_FILE_SIZE_MIB = 5
# The name column's length. Zulip stores names as unbounded text; hubbub refuses longer
# names with a message of its own (no Zulip wording exists for it).
MAX_EMOJI_NAME_LENGTH = 60

NAME_EXISTS = "A custom emoji with this name already exists."
_VALID_NAME = re.compile(r"[0-9a-z\-_]+")


class EmojiDoesNotExistError(JsonableError):
    """404 since feature level 190 (400 before)."""

    http_status = 404

    def __init__(self, name: str) -> None:
        super().__init__(f"Emoji '{name}' does not exist")


async def can_add_custom_emoji(
    conn: AsyncConnection, user: User, realm: Realm, *, now: float
) -> bool:
    """Whether the realm's ``can_add_custom_emoji_group`` (feature level 307, replacing
    ``add_custom_emoji_policy``) lets ``user`` add custom emoji: the one place that reads
    the setting."""
    return await user_has_permission(conn, user, realm, "can_add_custom_emoji_group", now=now)


def check_emoji_name(name: str) -> str:
    """The name an upload to ``/realm/emoji/{name}`` asks for, normalized as Zulip does,
    or Zulip's error."""
    name = name.strip().replace(" ", "_")
    if not name:
        raise JsonableError("Emoji name is missing")
    if not _VALID_NAME.fullmatch(name):
        raise JsonableError(
            "Emoji names must contain only lowercase English letters, digits, spaces, "
            "dashes, and underscores."
        )
    if name[-1] in "-_":
        raise JsonableError("Emoji names must end with either a letter or digit.")
    if len(name) > MAX_EMOJI_NAME_LENGTH:
        raise JsonableError(f"Emoji name is too long (limit: {MAX_EMOJI_NAME_LENGTH} characters)")
    return name


async def check_add_emoji_permission(
    conn: AsyncConnection, user: User, realm: Realm, name: str, *, now: float
) -> str:
    """The checks before the file is looked at, in Zulip's order; the normalized name."""
    check_member_or_admin(user)
    name = check_emoji_name(name)
    if not await can_add_custom_emoji(conn, user, realm, now=now):
        raise JsonableError("Insufficient permission")
    await check_name_free(conn, realm.id, name)
    return name


def check_may_override(user: User, name: str) -> None:
    """A Unicode emoji's name is for administrators only (as in Zulip, ``zulip`` is not
    among those names)."""
    if code_for_name(name) is not None and not user.is_realm_admin:
        raise JsonableError("Only administrators can override default emoji.")


def new_emoji_file_name(extension: str) -> str:
    """An unguessable, never reused file name (Zulip salts a hash of the emoji's id)."""
    return secrets.token_hex(8) + extension


async def notify_realm_emoji(tx: Tx, realm_id: int) -> None:
    emoji = await realm_emoji_dicts(tx.conn, realm_id)
    users = await list_active_users(tx.conn, realm_id)
    event = {"type": "realm_emoji", "op": "update", "realm_emoji": emoji}
    tx.notify(realm_id, event, [u.id for u in users])


async def check_name_free(conn: AsyncConnection, realm_id: int, name: str) -> None:
    if await get_active_emoji_by_name(conn, realm_id, name) is not None:
        raise JsonableError(NAME_EXISTS)


async def do_add_realm_emoji(
    tx: Tx, author: User, name: str, file_name: str, *, is_animated: bool
) -> int:
    """Store an emoji whose image is already stored as ``file_name``; its id."""
    # Checked again inside the transaction: another upload of the name may have
    # committed since the first check (the unique index is the last word).
    await check_name_free(tx.conn, author.realm_id, name)
    try:
        result = await tx.conn.execute(
            sa.insert(realm_emoji).values(
                realm_id=author.realm_id,
                name=name,
                file_name=file_name,
                author_id=author.id,
                deactivated=False,
                is_animated=is_animated,
            )
        )
    except sa.exc.IntegrityError:
        # The error ends the transaction, which is rolled back: nothing was written.
        raise JsonableError(NAME_EXISTS) from None
    await notify_realm_emoji(tx, author.realm_id)
    return int(result.inserted_primary_key[0])  # type: ignore[index]


async def check_remove_realm_emoji(tx: Tx, user: User, name: str) -> None:
    """``DELETE /realm/emoji/{emoji_name}``: deactivate the active emoji of that name."""
    row = await get_active_emoji_by_name(tx.conn, user.realm_id, name)
    if row is None:
        raise EmojiDoesNotExistError(name)
    if not user.is_realm_admin and row.author_id != user.id:
        raise JsonableError("Must be an organization administrator or emoji author")
    await tx.conn.execute(
        sa.update(realm_emoji).where(realm_emoji.c.id == row.id).values(deactivated=True)
    )
    await notify_realm_emoji(tx, user.realm_id)
