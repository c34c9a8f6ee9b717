"""/register state for muted_users and alert_words, and how their events update it.

Both events carry the user's whole list, so applying one replaces the list."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.alert_words import user_alert_words
from hubbub.queries.muted_users import list_muted_users
from hubbub.register.context import StateContext

_KINDS = ("muted_users", "alert_words")


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if ctx.wanted("muted_users"):
        state["muted_users"] = await list_muted_users(conn, ctx.me.id)
    if ctx.wanted("alert_words"):
        state["alert_words"] = await user_alert_words(conn, ctx.me.id)
    return state


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not one of this part's event types."""
    kind = event["type"]
    if kind not in _KINDS:
        return False
    if kind in state:
        state[kind] = event[kind]
    return True
