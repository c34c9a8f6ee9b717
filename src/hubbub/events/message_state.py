"""/register state about messages: ``max_message_id``, ``unread_msgs``,
``starred_messages`` and ``recent_private_conversations``, and how ``message`` events
update them.

Shapes follow Zulip 8.0: ``unread_msgs`` groups unread message ids (ascending) by
conversation, in the order of each conversation's oldest unread message; ``count``
leaves out messages in muted streams and topics (a followed or unmuted topic of a muted
stream counts); ``mentions`` leaves out wildcard mentions in muted streams and topics;
``old_unreads_missing`` is true when more than 50000 unread messages exist (only the
newest are listed). ``recent_private_conversations`` covers the newest 1000 direct
messages, newest conversation first.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.db.tables import (
    message,
    recipient,
    user_message,
)
from hubbub.events.context import StateContext
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_PERSONAL,
    RECIPIENT_STREAM,
    get_direct_message_group_members,
)
from hubbub.queries.message_flags import flag_is, get_mute_data, is_muted_topic
from hubbub.queries.messages import (
    IS_PRIVATE,
    MENTIONED,
    READ,
    STARRED,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
    max_message_id_for_user,
)

MAX_UNREAD_MESSAGES = 50000
MAX_RECENT_PRIVATE_MESSAGES = 1000


async def _unread_msgs(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    rows = list(
        await conn.execute(
            sa.select(
                user_message.c.message_id,
                user_message.c.flags,
                message.c.sender_id,
                message.c.topic,
                recipient.c.type,
                recipient.c.type_id,
            )
            .join(message, message.c.id == user_message.c.message_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(
                user_message.c.user_profile_id == user_id, user_message.c.flags.op("&")(READ) == 0
            )
            .order_by(user_message.c.message_id.desc())
            .limit(MAX_UNREAD_MESSAGES + 1)
        )
    )
    missing = len(rows) > MAX_UNREAD_MESSAGES
    rows = sorted(rows[:MAX_UNREAD_MESSAGES], key=lambda r: r.message_id)
    muted, policies = await get_mute_data(conn, user_id)
    members = await get_direct_message_group_members(
        conn, {r.type_id for r in rows if r.type == RECIPIENT_DIRECT_MESSAGE_GROUP}
    )
    # The rows come oldest first, so each conversation is created in the order of its oldest
    # unread message and its ids are appended in order: the state ``_add_unread`` would
    # build one message at a time, without its per-message searches and sorts.
    streams: dict[tuple[int, str], dict[str, Any]] = {}
    pms: dict[int, dict[str, Any]] = {}
    huddles: dict[str, dict[str, Any]] = {}
    mentions: list[int] = []
    count = 0
    for r in rows:
        message_id, flags = int(r.message_id), int(r.flags)
        is_muted = False
        if r.type == RECIPIENT_STREAM:
            is_muted = is_muted_topic(r.type_id, r.topic, muted, policies)
            entry = streams.get((r.type_id, r.topic))
            if entry is None:
                entry = {"stream_id": r.type_id, "topic": r.topic, "unread_message_ids": []}
                streams[(r.type_id, r.topic)] = entry
        elif r.type == RECIPIENT_PERSONAL:
            other = r.sender_id if r.sender_id != user_id else r.type_id
            entry = pms.get(other)
            if entry is None:
                # ``sender_id`` is the deprecated (feature level 119) name of other_user_id.
                entry = {"other_user_id": other, "sender_id": other, "unread_message_ids": []}
                pms[other] = entry
        else:
            key = ",".join(str(uid) for uid in sorted(members[r.type_id]))
            entry = huddles.get(key)
            if entry is None:
                entry = {"user_ids_string": key, "unread_message_ids": []}
                huddles[key] = entry
        entry["unread_message_ids"].append(message_id)
        if not is_muted:
            count += 1
        wildcard = flags & (STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED)
        if flags & MENTIONED or (wildcard and not is_muted):
            mentions.append(message_id)
    return {
        "pms": list(pms.values()),
        "streams": list(streams.values()),
        "huddles": list(huddles.values()),
        "mentions": mentions,
        "count": count,
        "old_unreads_missing": missing,
    }


def _add_unread(
    state: dict[str, Any],
    info: dict[str, Any],
    flags: int,
    muted: set[int],
    policies: dict[tuple[int, str], int],
) -> None:
    """Add one unread message to an ``unread_msgs`` state."""
    message_id = info["id"]
    is_muted = False
    if info["type"] == "stream":
        is_muted = is_muted_topic(info["stream_id"], info["topic"], muted, policies)
        entry = next(
            (
                e
                for e in state["streams"]
                if e["stream_id"] == info["stream_id"] and e["topic"] == info["topic"]
            ),
            None,
        )
        if entry is None:
            entry = {
                "stream_id": info["stream_id"],
                "topic": info["topic"],
                "unread_message_ids": [],
            }
            state["streams"].append(entry)
    elif info["type"] == "private":
        other = info["other_user_id"]
        entry = next((e for e in state["pms"] if e["other_user_id"] == other), None)
        if entry is None:
            # ``sender_id`` is the deprecated (feature level 119) name of other_user_id.
            entry = {"other_user_id": other, "sender_id": other, "unread_message_ids": []}
            state["pms"].append(entry)
    else:
        key = ",".join(str(uid) for uid in info["user_ids"])
        entry = next((e for e in state["huddles"] if e["user_ids_string"] == key), None)
        if entry is None:
            entry = {"user_ids_string": key, "unread_message_ids": []}
            state["huddles"].append(entry)
    if message_id in entry["unread_message_ids"]:
        return
    entry["unread_message_ids"].append(message_id)
    entry["unread_message_ids"].sort()
    _order_conversations(state)
    if not is_muted:
        state["count"] += 1
    wildcard = flags & (STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED)
    if flags & MENTIONED or (wildcard and not is_muted):
        state["mentions"].append(message_id)
        state["mentions"].sort()


def remove_unread_ids(state: dict[str, Any], message_ids: set[int]) -> None:
    """Take messages out of an ``unread_msgs`` state (read, deleted or moved away):
    conversations left empty disappear. ``count`` needs the mute settings, which live
    elsewhere in the register state: follow with ``recount_unread``."""
    for part in ("streams", "pms", "huddles"):
        kept = []
        for entry in state[part]:
            entry["unread_message_ids"] = [
                mid for mid in entry["unread_message_ids"] if mid not in message_ids
            ]
            if entry["unread_message_ids"]:
                kept.append(entry)
        state[part] = kept
    state["mentions"] = [mid for mid in state["mentions"] if mid not in message_ids]
    _order_conversations(state)


def _order_conversations(state: dict[str, Any]) -> None:
    # Conversations are listed in the order of their oldest unread message, as a fresh
    # fetch lists them (a message marked unread again can move its conversation up).
    for part in ("streams", "pms", "huddles"):
        state[part].sort(key=lambda e: e["unread_message_ids"][0])


def add_unread_message(
    register_state: dict[str, Any], info: dict[str, Any], flags: list[str]
) -> None:
    """Add one unread message to a whole register state's ``unread_msgs``. ``info`` is
    ``{"id", "sender_id", "type": "stream", "stream_id", "topic"}``, ``{..., "type":
    "private", "other_user_id"}`` or ``{..., "type": "huddle", "user_ids"}``; mute
    settings come from the state's own subscriptions and user topics."""
    muted, policies = _state_mute_data(register_state)
    _add_unread(register_state["unread_msgs"], info, _flags_value(flags), muted, policies)


def recount_unread(register_state: dict[str, Any]) -> None:
    """Recompute ``unread_msgs.count`` (unread messages outside muted streams and topics)
    after messages left it or moved between conversations."""
    unread = register_state["unread_msgs"]
    muted, policies = _state_mute_data(register_state)
    count = sum(len(e["unread_message_ids"]) for e in (*unread["pms"], *unread["huddles"]))
    for entry in unread["streams"]:
        if not is_muted_topic(entry["stream_id"], entry["topic"], muted, policies):
            count += len(entry["unread_message_ids"])
    unread["count"] = count


async def _recent_private_conversations(
    conn: AsyncConnection, user_id: int
) -> list[dict[str, Any]]:
    rows = list(
        await conn.execute(
            sa.select(
                user_message.c.message_id,
                message.c.sender_id,
                recipient.c.type,
                recipient.c.type_id,
            )
            .join(message, message.c.id == user_message.c.message_id)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(
                user_message.c.user_profile_id == user_id,
                # With the bit as a literal, so the partial index ix_user_message_private
                # matches.
                flag_is(IS_PRIVATE, True),
            )
            .order_by(user_message.c.message_id.desc())
            .limit(MAX_RECENT_PRIVATE_MESSAGES)
        )
    )
    members = await get_direct_message_group_members(
        conn, {r.type_id for r in rows if r.type == RECIPIENT_DIRECT_MESSAGE_GROUP}
    )
    latest: dict[tuple[int, ...], int] = {}
    for r in rows:
        if r.type == RECIPIENT_PERSONAL:
            people = {r.sender_id, r.type_id}
        else:
            people = set(members[r.type_id])
        key = tuple(sorted(people - {user_id}))
        latest[key] = max(latest.get(key, 0), int(r.message_id))
    return _sorted_conversations(latest)


def _sorted_conversations(latest: dict[tuple[int, ...], int]) -> list[dict[str, Any]]:
    return [
        {"max_message_id": mid, "user_ids": list(key)}
        for key, mid in sorted(latest.items(), key=lambda kv: -kv[1])
    ]


async def fetch(conn: AsyncConnection, ctx: StateContext) -> dict[str, Any]:
    state: dict[str, Any] = {}
    me = ctx.me.id
    if ctx.wanted("message"):
        state["max_message_id"] = await max_message_id_for_user(conn, me)
    if ctx.wanted("message") and ctx.wanted("update_message_flags"):
        state["unread_msgs"] = await _unread_msgs(conn, me)
    if ctx.wanted("starred_messages"):
        state["starred_messages"] = [
            mid
            for (mid,) in await conn.execute(
                sa.select(user_message.c.message_id)
                .where(
                    user_message.c.user_profile_id == me,
                    user_message.c.flags.op("&")(STARRED) != 0,
                )
                .order_by(user_message.c.message_id)
            )
        ]
    if ctx.wanted("recent_private_conversations"):
        state["recent_private_conversations"] = await _recent_private_conversations(conn, me)
    return state


def _state_mute_data(state: dict[str, Any]) -> tuple[set[int], dict[tuple[int, str], int]]:
    """Mute settings as a client knows them from its own state (absent: nothing muted)."""
    muted = {s["stream_id"] for s in state.get("subscriptions", ()) if s.get("is_muted")}
    policies = {
        (t["stream_id"], t["topic_name"].lower()): t["visibility_policy"]
        for t in state.get("user_topics", ())
    }
    return muted, policies


def _flags_value(names: list[str]) -> int:
    value = 0
    if "mentioned" in names:
        value |= MENTIONED
    if "stream_wildcard_mentioned" in names:
        value |= STREAM_WILDCARD_MENTIONED
    if "topic_wildcard_mentioned" in names:
        value |= TOPIC_WILDCARD_MENTIONED
    return value


def _apply_message(state: dict[str, Any], event: dict[str, Any]) -> None:
    msg = event["message"]
    flags: list[str] = event["flags"]
    if "max_message_id" in state:
        state["max_message_id"] = max(state["max_message_id"], msg["id"])
    if "starred_messages" in state and "starred" in flags:
        state["starred_messages"] = sorted({*state["starred_messages"], msg["id"]})
    me = state.get("user_id")
    people = [p["id"] for p in msg["display_recipient"]] if msg["type"] == "private" else []
    if "recent_private_conversations" in state and msg["type"] == "private" and me is not None:
        key = tuple(sorted(set(people) - {me}))
        latest = {
            tuple(c["user_ids"]): c["max_message_id"] for c in state["recent_private_conversations"]
        }
        latest[key] = max(latest.get(key, 0), msg["id"])
        state["recent_private_conversations"] = _sorted_conversations(latest)
    if msg["type"] == "stream":
        # A stream's first message sets its first_message_id (Zulip sends no separate
        # stream event for it).
        for part in ("subscriptions", "streams"):
            for item in state.get(part, ()):
                if item["stream_id"] == msg["stream_id"] and item["first_message_id"] is None:
                    item["first_message_id"] = msg["id"]
    if "unread_msgs" in state and "read" not in flags:
        info: dict[str, Any] = {"id": msg["id"], "sender_id": msg["sender_id"]}
        if msg["type"] == "stream":
            info.update(type="stream", stream_id=msg["stream_id"], topic=msg["subject"])
        elif len(people) <= 2:
            others = [uid for uid in people if uid != me]
            info.update(type="private", other_user_id=others[0] if others else me)
        else:
            info.update(type="huddle", user_ids=sorted(people))
        muted, policies = _state_mute_data(state)
        _add_unread(state["unread_msgs"], info, _flags_value(flags), muted, policies)


def _unread_info(me: int | None, message_id: int, details: dict[str, Any]) -> dict[str, Any]:
    """An ``add_unread_message`` info from one entry of an event's ``message_details``."""
    info: dict[str, Any] = {"id": message_id, "sender_id": None}
    if details["type"] == "stream":
        info.update(type="stream", stream_id=details["stream_id"], topic=details["topic"])
        return info
    others = [uid for uid in details["user_ids"] if uid != me]
    if len(others) <= 1:
        # No one else: a message to oneself.
        info.update(type="private", other_user_id=others[0] if others else me)
    else:
        info.update(type="huddle", user_ids=sorted([*others, *([me] if me is not None else [])]))
    return info


def _apply_flags(state: dict[str, Any], event: dict[str, Any]) -> None:
    flag, adding, ids = event["flag"], event["op"] == "add", event["messages"]
    if "max_message_id" in state and ids:
        # Every listed message has a row now: changing a flag of stream history the user
        # never received creates one.
        state["max_message_id"] = max(state["max_message_id"], *ids)
    if flag == "starred" and "starred_messages" in state:
        starred = set(state["starred_messages"])
        starred = starred | set(ids) if adding else starred - set(ids)
        state["starred_messages"] = sorted(starred)
    if flag != "read" or "unread_msgs" not in state:
        return
    unread = state["unread_msgs"]
    if adding and event["all"]:
        # Everything was marked read; the event lists no ids.
        unread.update(pms=[], streams=[], huddles=[], mentions=[], count=0)
        unread["old_unreads_missing"] = False
        return
    if adding:
        remove_unread_ids(unread, set(ids))
    else:
        me = state.get("user_id")
        for key, details in event["message_details"].items():
            names = ["mentioned"] if details.get("mentioned") else []
            add_unread_message(state, _unread_info(me, int(key), details), names)
    recount_unread(state)


def apply(state: dict[str, Any], event: dict[str, Any]) -> bool:
    if event["type"] == "message":
        _apply_message(state, event)
        return True
    if event["type"] == "update_message_flags":
        _apply_flags(state, event)
        return True
    return False
