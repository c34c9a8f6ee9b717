"""/register state for ``realm_emoji`` and how its event updates it, and the emoji data
file's URL that the realm state carries (``server_emoji_data_url``).

``realm_emoji`` is every custom emoji of the realm, deactivated ones too, keyed by id;
each ``realm_emoji`` ``update`` event carries the whole dict again.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.markdown.emoji import emoji_data_path
from hubbub.queries.realm_emoji import realm_emoji_dicts
from hubbub.register.context import StateContext


def server_emoji_data_url(realm_uri: str) -> str:
    """An absolute URL: the mobile apps fetch it as it is, without the realm's address
    (and without credentials)."""
    return realm_uri.rstrip("/") + emoji_data_path()


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("realm_emoji"):
        return {}
    return {"realm_emoji": dict(await realm_emoji_dicts(conn, ctx.realm.id))}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not this part's."""
    if event["type"] != "realm_emoji":
        return False
    if "realm_emoji" in state and event["op"] == "update":
        state["realm_emoji"] = event["realm_emoji"]
    return True
