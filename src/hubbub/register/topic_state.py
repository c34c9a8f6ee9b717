"""/register state about topic names: ``realm_empty_topic_display_name`` (feature level
334), and the register state as a client without ``empty_topic_name`` sees it.

The display name comes with the realm's state. It never changes (hubbub shows it in
English whatever the realm's language), so no event updates it.

A client without the ``empty_topic_name`` capability is shown the display name wherever
``/register`` names a stream's empty topic: the ``topic`` of ``unread_msgs.streams`` and
the ``topic_name`` of ``user_topics`` (Zulip's list); its events are renamed alike
(``events.empty_topic``), so the state it keeps agrees with a fresh ``/register``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.register.context import StateContext
from hubbub.topic_names import EMPTY_TOPIC_DISPLAY_NAME, display_topic


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    if ctx.wanted("realm"):
        return {"realm_empty_topic_display_name": EMPTY_TOPIC_DISPLAY_NAME}
    return {}


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """No event type is this part's own."""
    return False


def show_to_client(state: dict[str, Any], client_capabilities: dict[str, Any]) -> None:
    """Rename, in place, the empty topics of a fetched state for a client that did not
    announce the ``empty_topic_name`` capability."""
    if client_capabilities.get("empty_topic_name"):
        return
    unread = state.get("unread_msgs")
    if unread is not None:
        for entry in unread.get("streams", ()):
            entry["topic"] = display_topic(entry["topic"], allow_empty=False)
    for entry in state.get("user_topics", ()):
        entry["topic_name"] = display_topic(entry["topic_name"], allow_empty=False)
