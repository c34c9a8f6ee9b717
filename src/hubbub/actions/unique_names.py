"""The organization setting ``require_unique_names`` (feature level 246).

When it is on, a new or changed full name must differ from every other user's in the
organization, deactivated users and bots included, as in Zulip 10.2. Names are compared
after Unicode compatibility normalization (NFKC) and case folding, so an upper-case,
full-width or mathematical-alphabet spelling of a name clashes with the name itself.
"""

from __future__ import annotations

import unicodedata

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.errors import JsonableError
from hubbub.queries.realms import get_realm_by_id
from hubbub.queries.user_names import list_full_names


def _normalized(name: str) -> str:
    return unicodedata.normalize("NFKC", name).casefold()


async def check_unique_full_name(
    conn: AsyncConnection, realm_id: int, full_name: str, *, user_id: int | None = None
) -> None:
    """Refuse ``full_name`` (already checked by check_full_name) when the realm requires
    unique names and another user has it; ``user_id`` is the user being renamed. The
    setting is read here, inside the caller's transaction, so a change just made counts."""
    realm = await get_realm_by_id(conn, realm_id)
    if realm is None or not realm.setting("require_unique_names"):
        return
    wanted = _normalized(full_name)
    names = await list_full_names(conn, realm.id, except_user_id=user_id)
    if any(_normalized(name) == wanted for name in names):
        raise JsonableError("Unique names required in this organization.")
