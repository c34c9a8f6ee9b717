"""/register state for saved_snippets (feature level 297), and how the ``saved_snippets``
events (``add``, ``update`` since feature level 368, ``remove``) update it."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.saved_snippets import list_saved_snippets
from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("saved_snippets"):
        return {}
    return {"saved_snippets": await list_saved_snippets(conn, ctx.me.id)}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not one of this part's event types."""
    if event["type"] != "saved_snippets":
        return False
    if "saved_snippets" not in state:
        return True
    snippets: list[dict[str, Any]] = state["saved_snippets"]
    op = event["op"]
    if op == "add":
        snippets.append(dict(event["saved_snippet"]))
    elif op == "update":
        changed = event["saved_snippet"]
        snippets[:] = [dict(changed) if s["id"] == changed["id"] else s for s in snippets]
    elif op == "remove":
        snippets[:] = [s for s in snippets if s["id"] != event["saved_snippet_id"]]
    # A fresh fetch lists them oldest (lowest id) first.
    snippets.sort(key=lambda s: s["id"])
    return True
