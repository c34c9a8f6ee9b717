"""/register state for realm_playgrounds, and how its event updates it: the event carries
the realm's whole list, which replaces the client's."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.playgrounds import playgrounds_for_realm
from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("realm_playgrounds"):
        return {}
    return {"realm_playgrounds": list(await playgrounds_for_realm(conn, ctx.realm.id))}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not this part's event type."""
    if event["type"] != "realm_playgrounds":
        return False
    if "realm_playgrounds" in state:
        state["realm_playgrounds"] = event["realm_playgrounds"]
    return True
