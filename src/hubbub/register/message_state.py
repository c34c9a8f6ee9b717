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

from hubbub.db.dialects import PerDialect, long_read, over_user_message
from hubbub.db.fast import fetch_rows
from hubbub.db.tables import (
    message,
    recipient,
    user_message,
)
from hubbub.queries.message_dicts import (
    RECIPIENT_DIRECT_MESSAGE_GROUP,
    RECIPIENT_PERSONAL,
    RECIPIENT_STREAM,
    get_direct_message_group_members,
)
from hubbub.queries.message_flags import get_mute_data, is_muted_topic
from hubbub.queries.messages import (
    IS_PRIVATE,
    MENTIONED,
    READ,
    STARRED,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
    flag_is,
    max_message_id_for_user,
)
from hubbub.register.context import StateContext

MAX_UNREAD_MESSAGES = 50000
MAX_RECENT_PRIVATE_MESSAGES = 1000


def _newest_own_rows(flag_test: sa.ColumnElement[bool], limit: int) -> sa.Subquery:
    """The newest ``limit`` rows of the user ``:user_id`` passing ``flag_test``, as a
    subquery that the message and recipient joins take as it is: the planner then knows
    it has at most ``limit`` rows and looks each message up by id. Joined in one query,
    PostgreSQL took the flag test's default selectivity (``<>``: nearly every row) for a
    user with few direct messages, expected a great many rows and merged them with a
    backward scan of every message."""
    return (
        sa.select(user_message.c.message_id, user_message.c.flags)
        .where(user_message.c.user_profile_id == sa.bindparam("user_id"), flag_test)
        .order_by(user_message.c.message_id.desc())
        .limit(limit)
        .subquery("mine")
    )


def _with_message(mine: sa.Subquery, *columns: Any) -> sa.Select[Any]:
    return (
        sa.select(mine.c.message_id, *columns)
        .select_from(mine)
        .join(message, message.c.id == mine.c.message_id)
        .join(recipient, recipient.c.id == message.c.recipient_id)
        .order_by(mine.c.message_id.desc())
    )


# Literal bits, as in the partial indexes' predicates: with bound parameters,
# PostgreSQL's generic plan of the prepared statement (asyncpg prepares every
# statement; the generic plan is used from the sixth execution) cannot use them, and a
# register then read all the user's rows. Module-level statements, read through
# ``fetch_rows``: SQLAlchemy's own row objects cost more, and a user may have tens of
# thousands unread.
# The unread rows are a read without a small bound (up to MAX_UNREAD_MESSAGES + 1 rows,
# each a page of ``message``): ``long_read``, so that SQLite runs it in the reader's
# thread. Inline, no other request moved while it ran (bench/results/sqlite-connections.md,
# *The unread read off the loop*).
_UNREAD = _newest_own_rows(flag_is(READ, False), MAX_UNREAD_MESSAGES + 1)
_UNREAD_ROWS = long_read(
    _with_message(
        _UNREAD,
        _UNREAD.c.flags,
        message.c.sender_id,
        message.c.topic,
        recipient.c.type,
        recipient.c.type_id,
    )
)
_PRIVATE = _newest_own_rows(flag_is(IS_PRIVATE, True), MAX_RECENT_PRIVATE_MESSAGES)
_PRIVATE_ROWS = _with_message(_PRIVATE, message.c.sender_id, recipient.c.type, recipient.c.type_id)
# Over each table of the user's rows in turn on SQLite (``over_user_message``).
_UNREAD_OVER = PerDialect(lambda dialect: dialect.over_tables(_UNREAD_ROWS))
_PRIVATE_OVER = PerDialect(lambda dialect: dialect.over_tables(_PRIVATE_ROWS))


async def _newest_rows(
    conn: AsyncConnection, statement: PerDialect[Any], user_id: int, limit: int
) -> list[Any]:
    """The newest ``limit`` rows (by message id, first) of a statement over the user's
    rows, whose tables' results come one after the other."""
    rows = list(await fetch_rows(conn, statement(conn), {"user_id": user_id}))
    rows.sort(key=lambda row: row[0], reverse=True)
    return rows[:limit]


async def _unread_msgs(conn: AsyncConnection, user_id: int) -> dict[str, Any]:
    rows = await _newest_rows(conn, _UNREAD_OVER, user_id, MAX_UNREAD_MESSAGES + 1)
    missing = len(rows) > MAX_UNREAD_MESSAGES
    # Newest first from the query; oldest first from here on.
    rows = rows[:MAX_UNREAD_MESSAGES][::-1]
    muted, policies = await get_mute_data(conn, user_id)
    members = await get_direct_message_group_members(
        conn, {type_id for *_, rtype, type_id in rows if rtype == RECIPIENT_DIRECT_MESSAGE_GROUP}
    )
    # The rows come oldest first, so each conversation is created in the order of its oldest
    # unread message and its ids are appended in order: the state ``_add_unread`` would
    # build one message at a time, without its per-message searches and sorts. A
    # conversation's entry and mute state are worked out at its first message only (a
    # user's thousands of unread messages sit in a few hundred conversations).
    parts: dict[str, dict[Any, dict[str, Any]]] = {"streams": {}, "pms": {}, "huddles": {}}
    conversations: dict[tuple[Any, ...], tuple[list[int], bool]] = {}
    mentions: list[int] = []
    count = 0
    for r in rows:
        message_id, flags, sender_id, topic, rtype, type_id = r
        if rtype == RECIPIENT_STREAM:
            key: tuple[Any, ...] = (rtype, type_id, topic)
        elif rtype == RECIPIENT_PERSONAL:
            key = (rtype, sender_id if sender_id != user_id else type_id)
        else:
            key = (rtype, type_id)
        found = conversations.get(key)
        if found is None:
            info = _row_info(message_id, sender_id, topic, rtype, type_id, user_id, members)
            part, part_key, new_entry = _conversation(info)
            entry = parts[part].setdefault(part_key, new_entry)
            found = (entry["unread_message_ids"], _is_muted(info, muted, policies))
            conversations[key] = found
        ids, is_muted = found
        ids.append(message_id)
        if not is_muted:
            count += 1
        if _counts_as_mention(flags, is_muted):
            mentions.append(message_id)
    return {
        **{part: list(entries.values()) for part, entries in parts.items()},
        "mentions": mentions,
        "count": count,
        "old_unreads_missing": missing,
    }


def _row_info(
    message_id: int,
    sender_id: int,
    topic: str,
    rtype: int,
    type_id: int,
    user_id: int,
    members: dict[int, list[int]],
) -> dict[str, Any]:
    info: dict[str, Any] = {"id": int(message_id), "sender_id": sender_id}
    if rtype == RECIPIENT_STREAM:
        info.update(type="stream", stream_id=type_id, topic=topic)
    elif rtype == RECIPIENT_PERSONAL:
        other = sender_id if sender_id != user_id else type_id
        info.update(type="private", other_user_id=other)
    else:
        info.update(type="huddle", user_ids=sorted(members[type_id]))
    return info


def _is_muted(info: dict[str, Any], muted: set[int], policies: dict[tuple[int, str], int]) -> bool:
    if info["type"] != "stream":
        return False
    return is_muted_topic(info["stream_id"], info["topic"], muted, policies)


def _conversation(info: dict[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    """The part of ``unread_msgs`` a message belongs to, its conversation's key there (see
    ``_entry_key``) and an empty entry for that conversation."""
    if info["type"] == "stream":
        stream_id, topic = info["stream_id"], info["topic"]
        entry = {"stream_id": stream_id, "topic": topic, "unread_message_ids": []}
        return "streams", (stream_id, topic), entry
    if info["type"] == "private":
        other = info["other_user_id"]
        # ``sender_id`` is the deprecated (feature level 119) name of other_user_id.
        return "pms", other, {"other_user_id": other, "sender_id": other, "unread_message_ids": []}
    key = ",".join(str(uid) for uid in info["user_ids"])
    return "huddles", key, {"user_ids_string": key, "unread_message_ids": []}


def _entry_key(part: str, entry: dict[str, Any]) -> Any:
    if part == "streams":
        return (entry["stream_id"], entry["topic"])
    if part == "pms":
        return entry["other_user_id"]
    return entry["user_ids_string"]


def _counts_as_mention(flags: int, is_muted: bool) -> bool:
    # Wildcard mentions in muted topics do not count (personal mentions always do).
    wildcard = flags & (STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED)
    return bool(flags & MENTIONED or (wildcard and not is_muted))


def _add_unread(
    state: dict[str, Any],
    info: dict[str, Any],
    flags: int,
    muted: set[int],
    policies: dict[tuple[int, str], int],
) -> None:
    """Add one unread message to an ``unread_msgs`` state."""
    message_id = info["id"]
    is_muted = _is_muted(info, muted, policies)
    part, key, new_entry = _conversation(info)
    entry = next((e for e in state[part] if _entry_key(part, e) == key), None)
    if entry is None:
        entry = new_entry
        state[part].append(entry)
    if message_id in entry["unread_message_ids"]:
        return
    entry["unread_message_ids"].append(message_id)
    entry["unread_message_ids"].sort()
    _order_conversations(state)
    if not is_muted:
        state["count"] += 1
    if _counts_as_mention(flags, is_muted):
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
    rows = await _newest_rows(conn, _PRIVATE_OVER, user_id, MAX_RECENT_PRIVATE_MESSAGES)
    members = await get_direct_message_group_members(
        conn, {type_id for _, _, rtype, type_id in rows if rtype == RECIPIENT_DIRECT_MESSAGE_GROUP}
    )
    latest: dict[tuple[int, ...], int] = {}
    for message_id, sender_id, rtype, type_id in rows:
        people = {sender_id, type_id} if rtype == RECIPIENT_PERSONAL else set(members[type_id])
        key = tuple(sorted(people - {user_id}))
        latest[key] = max(latest.get(key, 0), int(message_id))
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
        starred = sa.select(user_message.c.message_id).where(
            user_message.c.user_profile_id == me, flag_is(STARRED, True)
        )
        found = await conn.execute(over_user_message(conn, starred))
        state["starred_messages"] = sorted(mid for (mid,) in found)
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
