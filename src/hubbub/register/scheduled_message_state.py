"""``scheduled_messages`` in /register: the user's undelivered scheduled messages (failed
ones included) by delivery time, and how the ``scheduled_messages`` events change it
(feature level 179)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.scheduled_messages import (
    list_undelivered_scheduled_messages,
    scheduled_order_key,
)
from hubbub.register.context import StateContext

_KIND = "scheduled_messages"


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if not ctx.wanted(_KIND):
        return {}
    return {_KIND: await list_undelivered_scheduled_messages(conn, ctx.me.id)}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    if event["type"] != _KIND:
        return False
    if _KIND not in state:
        return True
    items: list[dict[str, Any]] = state[_KIND]
    op = event["op"]
    if op == "add":
        added = {item["scheduled_message_id"] for item in event["scheduled_messages"]}
        items[:] = [i for i in items if i["scheduled_message_id"] not in added]
        items.extend(event["scheduled_messages"])
    elif op == "update":
        changed = event["scheduled_message"]
        items[:] = [
            changed if i["scheduled_message_id"] == changed["scheduled_message_id"] else i
            for i in items
        ]
    elif op == "remove":
        items[:] = [i for i in items if i["scheduled_message_id"] != event["scheduled_message_id"]]
    items.sort(key=scheduled_order_key)
    return True
