"""How ``delete_message`` events change /register state.

The event comes in two forms: ``message_ids`` (clients with the ``bulk_message_deletion``
capability) or one event per message with ``message_id``. It takes the messages out of
``unread_msgs`` and ``starred_messages``.

``max_message_id`` and ``recent_private_conversations`` are where Zulip 8.0 re-reads the
database while applying the event; a client only has its own state, and the event does not
say what the newest remaining message is. When a deleted message was the newest one, the
value falls back to the newest message the state still knows of (an unread or starred
message, or a conversation's newest message): exact whenever that message is the newest
remaining one, otherwise an underestimate that the next /register corrects. With nothing
known, the value stays (as the Zulip web app leaves a conversation's newest message id).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.register.context import StateContext
from hubbub.register.message_state import recount_unread, remove_unread_ids


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    # Deletion adds no state of its own; the message state module fetches what it changes.
    return {}


def _unread_by_conversation(state: dict[str, Any]) -> dict[tuple[int, ...], list[int]]:
    """Unread direct message ids per conversation, keyed as ``recent_private_conversations``
    keys them (the other participants, sorted; () for messages to oneself)."""
    unread = state.get("unread_msgs")
    me = state.get("user_id")
    result: dict[tuple[int, ...], list[int]] = {}
    if unread is None or me is None:
        return result
    for entry in unread["pms"]:
        other = entry["other_user_id"]
        result[() if other == me else (other,)] = entry["unread_message_ids"]
    for entry in unread["huddles"]:
        people = {int(uid) for uid in entry["user_ids_string"].split(",")}
        result[tuple(sorted(people - {me}))] = entry["unread_message_ids"]
    return result


def _update_recent_conversations(state: dict[str, Any], deleted: set[int]) -> None:
    conversations = state["recent_private_conversations"]
    if not any(c["max_message_id"] in deleted for c in conversations):
        return
    unread = _unread_by_conversation(state)
    for conversation in conversations:
        if conversation["max_message_id"] in deleted:
            known = unread.get(tuple(conversation["user_ids"]), [])
            if known:
                conversation["max_message_id"] = max(known)
    conversations.sort(key=lambda c: -c["max_message_id"])


def _known_message_ids(state: dict[str, Any]) -> set[int]:
    """Ids of the user's messages that the state still lists."""
    known: set[int] = set(state.get("starred_messages", ()))
    unread = state.get("unread_msgs")
    if unread is not None:
        for part in ("streams", "pms", "huddles"):
            for entry in unread[part]:
                known.update(entry["unread_message_ids"])
    for conversation in state.get("recent_private_conversations", ()):
        known.add(conversation["max_message_id"])
    return known


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    if event["type"] != "delete_message":
        return False
    deleted = set(event["message_ids"]) if "message_ids" in event else {event["message_id"]}
    if "unread_msgs" in state:
        remove_unread_ids(state["unread_msgs"], deleted)
        recount_unread(state)
    if "starred_messages" in state:
        state["starred_messages"] = [m for m in state["starred_messages"] if m not in deleted]
    if "recent_private_conversations" in state and event["message_type"] == "private":
        _update_recent_conversations(state, deleted)
    if state.get("max_message_id") in deleted:
        known = _known_message_ids(state) - deleted
        if known:
            state["max_message_id"] = max(known)
    return True
