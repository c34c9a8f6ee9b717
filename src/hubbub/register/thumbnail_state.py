"""/register state for ``server_thumbnail_formats`` (feature level 273): the thumbnail
formats clients may ask for in place of the one message HTML names, sent with the realm
state. They are fixed for the server's lifetime, so no event changes them."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.register.context import StateContext
from hubbub.uploads.thumbnails import server_thumbnail_formats


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("realm"):
        return {}
    return {"server_thumbnail_formats": server_thumbnail_formats()}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """No event is this part's."""
    return False
