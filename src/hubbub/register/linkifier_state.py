"""/register state for realm_linkifiers and legacy realm_filters, and how their events update it.

Since feature level 176 linkifiers carry RFC 6570 URL templates, which older clients
cannot use: a client that does not announce the ``linkifier_url_template`` capability
gets an empty ``realm_linkifiers`` list (and no ``realm_linkifiers`` events; the queue
drops them). The legacy ``realm_filters`` key is always an empty list, and its event is
never sent.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.linkifiers import linkifiers_for_realm
from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if ctx.wanted("realm_linkifiers"):
        if ctx.client_capabilities.get("linkifier_url_template"):
            state["realm_linkifiers"] = list(await linkifiers_for_realm(conn, ctx.realm.id))
        else:
            state["realm_linkifiers"] = []
    if ctx.wanted("realm_filters"):
        state["realm_filters"] = []
    return state


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not one of this part's event types."""
    kind: str = event["type"]
    if kind == "realm_linkifiers":
        if "realm_linkifiers" in state:
            state["realm_linkifiers"] = event["realm_linkifiers"]
        return True
    # Legacy; hubbub never sends it, and the state it would update is always empty.
    return kind == "realm_filters"
