"""Naming an emoji in a request (reactions, user statuses): the realm's custom emoji, then
Zulip's own ``zulip`` emoji, then the Unicode emoji.

A custom emoji's ``emoji_code`` is its id as a string. Behaviour follows Zulip 10.2's
``get_emoji_data`` and ``check_emoji_request``: an active custom emoji's name wins over
a Unicode emoji of the same name; a deactivated one can no longer be named, nor used
for a new reaction or status ("This custom emoji has been deactivated."), though
reactions and votes for reactions that already use it stay possible.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.errors import JsonableError
from hubbub.markdown.emoji import code_for_name, name_for_code
from hubbub.queries.realm_emoji import get_active_emoji_by_name, get_emoji_by_code
from hubbub.queries.user_status import REALM_EMOJI, UNICODE_EMOJI, ZULIP_EXTRA_EMOJI


def emoji_data_for_name(name: str) -> tuple[str, str]:
    """(emoji_code, reaction_type) of the built-in emoji named ``name``: ``zulip`` or a
    Unicode emoji."""
    if name == "zulip":
        return "zulip", ZULIP_EXTRA_EMOJI
    code = code_for_name(name)
    if code is None:
        raise JsonableError(f"Emoji '{name}' does not exist")
    return code, UNICODE_EMOJI


def check_emoji(name: str, code: str, reaction_type: str) -> None:
    """Whether (name, code, type) names a built-in emoji, with Zulip's messages; a custom
    emoji needs the realm's list (``check_realm_emoji_request``)."""
    if reaction_type == REALM_EMOJI:
        raise JsonableError("Invalid custom emoji.")
    if reaction_type == ZULIP_EXTRA_EMOJI:
        if code != "zulip":
            raise JsonableError("Invalid emoji code.")
        if name != code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == UNICODE_EMOJI:
        if name_for_code(code) is None:
            raise JsonableError("Invalid emoji code.")
        if code_for_name(name) != code:
            raise JsonableError("Invalid emoji name.")
    else:
        raise JsonableError("Invalid emoji type.")


async def emoji_data_for_realm_name(
    conn: AsyncConnection, realm_id: int, name: str
) -> tuple[str, str]:
    """(emoji_code, reaction_type) of the emoji named ``name`` in the realm."""
    custom = await get_active_emoji_by_name(conn, realm_id, name)
    if custom is not None:
        return str(custom.id), REALM_EMOJI
    return emoji_data_for_name(name)


async def check_realm_emoji_request(
    conn: AsyncConnection, realm_id: int, name: str, code: str, reaction_type: str
) -> None:
    """Whether (name, code, type) names an emoji a new reaction or status may use, with
    Zulip's messages."""
    if reaction_type != REALM_EMOJI:
        check_emoji(name, code, reaction_type)
        return
    custom = await get_emoji_by_code(conn, realm_id, code)
    if custom is None:
        raise JsonableError("Invalid custom emoji.")
    if custom.name != name:
        raise JsonableError("Invalid custom emoji name.")
    if custom.deactivated:
        raise JsonableError("This custom emoji has been deactivated.")
