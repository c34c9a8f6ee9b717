"""/register state for ``realm_bots`` (the ``realm_bot`` event type), and how its events
update it.

``realm_bots`` lists the bots the user administers (``queries/bots.py``), in id order;
the events keep that order. An ``add`` replaces a bot the state already holds, so that
folding in an event that raced with the fetch changes nothing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.bots import get_owned_bot_dicts
from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted("realm_bot"):
        return {}
    return {"realm_bots": await get_owned_bot_dicts(conn, ctx.me)}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not a ``realm_bot`` event."""
    if event["type"] != "realm_bot":
        return False
    if "realm_bots" not in state:
        return True
    bots: list[dict[str, Any]] = state["realm_bots"]
    op, data = event["op"], event["bot"]
    user_id = data["user_id"]
    if op == "add":
        # The add event leaves out ``owner_id`` for a bot without an owner.
        bot = {"owner_id": None, **data}
        state["realm_bots"] = sorted(
            [b for b in bots if b["user_id"] != user_id] + [bot], key=lambda b: b["user_id"]
        )
    elif op == "update":
        for bot in bots:
            if bot["user_id"] == user_id:
                bot.update(data)
    elif op == "delete":
        state["realm_bots"] = [b for b in bots if b["user_id"] != user_id]
    elif op == "remove":
        # Deactivation before feature level 222; hubbub never sends it.
        for bot in bots:
            if bot["user_id"] == user_id:
                bot["is_active"] = False
    return True
