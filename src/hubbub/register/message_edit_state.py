"""/register state and ``update_message`` events (edits and moves of messages).

/register returns no messages, so an edit changes only ``unread_msgs``:
- moved messages (``message_ids``, when the event has ``new_stream_id`` and/or ``subject``)
  that are unread move to their new stream and topic; ``count`` follows the new place's
  mute settings;
- the edited message (``message_id``) is listed under ``mentions`` exactly when the user's
  new ``flags`` say so (a content edit may add or remove a mention), and leaves the unread
  lists when the flags say it is read.

The other moved messages keep their mention status (the event carries flags only for the
edited one). Zulip's own ``apply_event`` moves unread messages only; following the flags
too keeps the state equal to a fresh fetch after an edit that mentions someone.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.register.context import StateContext
from hubbub.register.message_state import add_unread_message, recount_unread, remove_unread_ids


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    # Nothing of its own: the unread state is message_state's.
    return {}


def _unread_infos(
    unread: dict[str, Any], ids: set[int]
) -> dict[int, tuple[dict[str, Any], list[str]]]:
    """For each of ``ids`` that is unread: an ``add_unread_message`` info describing its
    current conversation, and flags that keep its current mention status."""
    mentions = set(unread["mentions"])
    found: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def note(mid: int, info: dict[str, Any]) -> None:
        found[mid] = (
            {"id": mid, "sender_id": None, **info},
            ["mentioned"] if mid in mentions else [],
        )

    for entry in unread["streams"]:
        for mid in ids.intersection(entry["unread_message_ids"]):
            note(mid, {"type": "stream", "stream_id": entry["stream_id"], "topic": entry["topic"]})
    for entry in unread["pms"]:
        for mid in ids.intersection(entry["unread_message_ids"]):
            note(mid, {"type": "private", "other_user_id": entry["other_user_id"]})
    for entry in unread["huddles"]:
        user_ids = [int(uid) for uid in entry["user_ids_string"].split(",")]
        for mid in ids.intersection(entry["unread_message_ids"]):
            note(mid, {"type": "huddle", "user_ids": user_ids})
    return found


def _apply_unread(state: dict[str, Any], event: dict[str, Any]) -> None:
    unread = state["unread_msgs"]
    target: int = event["message_id"]
    moved = "new_stream_id" in event or "subject" in event
    ids = {target, *event["message_ids"]} if moved else {target}
    infos = _unread_infos(unread, ids)
    if not infos:
        return
    remove_unread_ids(unread, set(infos))
    if target in infos:
        info, _flags = infos[target]
        if "read" in event["flags"]:
            del infos[target]
        else:
            infos[target] = (info, event["flags"])
    for mid in sorted(infos):
        info, flags = infos[mid]
        if moved and info["type"] == "stream":
            info["stream_id"] = event.get("new_stream_id", info["stream_id"])
            info["topic"] = event.get("subject", info["topic"])
        add_unread_message(state, info, flags)
    recount_unread(state)


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    if event["type"] != "update_message":
        return False
    if "unread_msgs" in state and not event.get("rendering_only"):
        _apply_unread(state, event)
    return True
