"""/register state for presences and user_status, and how their events update it.

``presences`` (with ``server_timestamp``) comes in the form the client asked for:
modern, keyed by user id string (``slim_presence``), or legacy, keyed by email. A
``presence`` event always carries the legacy ``website`` object; it is sent only when a
row is created or a user comes back online (actions/presence.py), and it updates the state
so that it equals a fresh fetch:
- legacy: the user's entry becomes ``{website, aggregated}`` built from the event;
- modern: an ``idle`` event only comes from a new row of a user never active, so the
  entry becomes ``{active_timestamp: 0, idle_timestamp: t}``; an ``active`` one raises
  both timestamps to ``t`` (as Zulip's web client merges it).
``server_timestamp`` stays the time of the fetch (Zulip's apply_event does not touch it),
and so does ``presence_last_update_id`` (feature level 263: the newest update id among
the fetched rows, or -1), which no event carries; a client polls ``POST
/users/me/presence`` with it for the rows changed since. ``presence_history_limit_days``
(feature level 288) limits the fetch to users connected within that many days, 14 by
default; 0 fetches none.
Rows older than two weeks are left out of a fresh fetch but never removed by events;
clients judge who is offline from the timestamps (140-second threshold).

``user_status`` holds only users with something set; a ``user_status`` event changes the
fields it carries, and an empty value removes the field (Zulip's apply_event).
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.queries.presence import PresenceRequest, get_realm_presences
from hubbub.queries.user_status import get_user_status_dict
from hubbub.register.context import StateContext


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if ctx.wanted("presence"):
        now = ctx.now if ctx.now is not None else time.time()
        request = PresenceRequest(history_limit_days=ctx.presence_history_limit_days)
        state["presences"], state["presence_last_update_id"] = await get_realm_presences(
            conn, ctx.realm, now=now, slim=ctx.slim_presence, request=request
        )
        state["server_timestamp"] = now
    if ctx.wanted("user_status"):
        state["user_status"] = await get_user_status_dict(conn, ctx.realm.id)
    return state


def _apply_presence(state: dict[str, Any], event: dict[str, Any]) -> None:
    presences = state.get("presences")
    if presences is None:
        return
    website = event["presence"]["website"]
    if "user_id" in event and ("email" not in event or _is_slim(presences)):
        key = str(event["user_id"])
        timestamp = website["timestamp"]
        if website["status"] == "idle":
            presences[key] = {"active_timestamp": 0, "idle_timestamp": timestamp}
        else:
            entry = presences.setdefault(key, {"active_timestamp": 0, "idle_timestamp": 0})
            entry["active_timestamp"] = max(entry["active_timestamp"], timestamp)
            entry["idle_timestamp"] = max(entry["idle_timestamp"], timestamp)
        return
    presences[event["email"]] = {
        "website": dict(website),
        "aggregated": {k: website[k] for k in ("client", "status", "timestamp")},
    }


def _is_slim(presences: dict[str, Any]) -> bool:
    # A state holding both keys of an unshaped event: its entries tell the form; an empty
    # one cannot, and the modern form is what current clients use.
    return not presences or any("active_timestamp" in entry for entry in presences.values())


def _apply_user_status(state: dict[str, Any], event: dict[str, Any]) -> None:
    statuses = state.get("user_status")
    if statuses is None:
        return
    key = str(event["user_id"])
    entry = statuses.setdefault(key, {})
    if "away" in event:
        if event["away"]:
            entry["away"] = True
        else:
            entry.pop("away", None)
    if "status_text" in event:
        if event["status_text"]:
            entry["status_text"] = event["status_text"]
        else:
            entry.pop("status_text", None)
    if "emoji_name" in event:
        if event["emoji_name"]:
            entry.update(
                emoji_name=event["emoji_name"],
                emoji_code=event["emoji_code"],
                reaction_type=event["reaction_type"],
            )
        else:
            for name in ("emoji_name", "emoji_code", "reaction_type"):
                entry.pop(name, None)
    if not entry:
        del statuses[key]


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    """Apply one event; False when it is not one of this part's event types."""
    if event["type"] == "presence":
        _apply_presence(state, event)
        return True
    if event["type"] == "user_status":
        _apply_user_status(state, event)
        return True
    return False
