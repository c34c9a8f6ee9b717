"""The stream-related parts of /register state and how their events update them:
``subscriptions``/``unsubscribed``/``never_subscribed``, ``streams``, ``default_streams``,
``user_topics`` and legacy ``muted_topics``.

Lists are sorted by stream name (as Zulip sorts them) or, for topics, by stream and topic,
both when fetched and after every event, so a fresh state equals an updated one. Since
feature level 330 ``realm_default_streams`` holds stream ids (in id order), not streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from hubbub.models import User
from hubbub.queries.streams import (
    can_access_stream_metadata,
    can_access_subscribers,
    get_default_stream_ids,
    get_subscriber_ids,
    list_streams,
    list_user_subscriptions,
    stream_dict,
    subscription_dict,
)
from hubbub.queries.user_topics import list_user_topics, muted_topics_legacy
from hubbub.register.message_state import recount_unread

SUBSCRIPTION_LISTS = ("subscriptions", "unsubscribed", "never_subscribed")


def _by_name(items: list[dict[str, Any]]) -> None:
    items.sort(key=lambda s: (s["name"], s["stream_id"]))


def _by_topic(items: list[dict[str, Any]]) -> None:
    items.sort(key=lambda t: (t["stream_id"], t["topic_name"].lower()))


async def fetch_stream_state(
    conn: AsyncConnection,
    me: User,
    wanted: Callable[[str], bool],
    *,
    include_subscribers: bool,
    archived_channels: bool = False,
) -> dict[str, Any]:
    """The stream parts of the state; archived streams only for a client with the
    ``archived_channels`` capability (feature level 315)."""
    state: dict[str, Any] = {}
    # A queue for messages alone (a bot's ``event_types: ["message"]``) needs none of the
    # realm's streams: read them only for the state that shows them.
    with_subscriptions = wanted("subscription") or wanted("stream")
    streams = (
        await list_streams(conn, me.realm_id, include_archived=archived_channels)
        if with_subscriptions
        else []
    )
    by_id = {s.id: s for s in streams}
    subs = (
        [
            sub
            for sub in await list_user_subscriptions(
                conn, me.id, include_archived=archived_channels
            )
            if sub.stream_id in by_id
        ]
        if with_subscriptions
        else []
    )
    subscribed = {sub.stream_id for sub in subs if sub.active}
    if wanted("subscription"):
        ever = {sub.stream_id for sub in subs}
        never = [
            s
            for s in streams
            if s.id not in ever and can_access_stream_metadata(me, s, subscribed=False)
        ]
        subscribers = (
            await get_subscriber_ids(conn, [sub.stream_id for sub in subs] + [s.id for s in never])
            if include_subscribers
            else {}
        )

        def visible_subscribers(stream_id: int) -> list[int] | None:
            if not include_subscribers:
                return None
            if not can_access_subscribers(me, by_id[stream_id], stream_id in subscribed):
                return []
            return subscribers[stream_id]

        state["subscriptions"] = [
            subscription_dict(by_id[sub.stream_id], sub, visible_subscribers(sub.stream_id))
            for sub in subs
            if sub.active
        ]
        # A former subscriber of a private stream loses sight of it (a ``stream`` delete
        # event told them), so it is not among their unsubscribed streams either.
        state["unsubscribed"] = [
            subscription_dict(by_id[sub.stream_id], sub, visible_subscribers(sub.stream_id))
            for sub in subs
            if not sub.active
            and can_access_stream_metadata(me, by_id[sub.stream_id], subscribed=False)
        ]
        state["never_subscribed"] = []
        for s in never:
            entry = stream_dict(s)
            if include_subscribers:
                entry["subscribers"] = visible_subscribers(s.id)
            state["never_subscribed"].append(entry)
        for key in SUBSCRIPTION_LISTS:
            _by_name(state[key])
    if wanted("stream"):
        state["streams"] = [
            stream_dict(s)
            for s in streams
            if can_access_stream_metadata(me, s, subscribed=s.id in subscribed)
        ]
        _by_name(state["streams"])
    if wanted("default_streams"):
        # Guests are not told the default streams, nor sent their events.
        state["realm_default_streams"] = (
            [] if me.is_guest else await get_default_stream_ids(conn, me.realm_id)
        )
    if wanted("default_stream_groups"):
        # Default stream groups cannot be created yet; the list is truly empty.
        state["realm_default_stream_groups"] = []
    if wanted("user_topic"):
        state["user_topics"] = await list_user_topics(conn, me.id)
        _by_topic(state["user_topics"])
    if wanted("muted_topics"):
        state["muted_topics"] = await muted_topics_legacy(conn, me.id)
    return state


def _entries(state: dict[str, Any], stream_id: int) -> list[dict[str, Any]]:
    return [
        entry
        for key in (*SUBSCRIPTION_LISTS, "streams")
        for entry in state.get(key, [])
        if entry["stream_id"] == stream_id
    ]


def _apply_subscription(
    state: dict[str, Any], event: dict[str, Any], include_subscribers: bool
) -> None:
    op = event["op"]
    if "subscriptions" not in state:
        return
    if op == "add":
        for sub in event["subscriptions"]:
            sub = dict(sub)
            if not include_subscribers:
                sub.pop("subscribers", None)
            for key in SUBSCRIPTION_LISTS:
                state[key] = [s for s in state[key] if s["stream_id"] != sub["stream_id"]]
            state["subscriptions"].append(sub)
    elif op == "remove":
        for removed in event["subscriptions"]:
            moved = [s for s in state["subscriptions"] if s["stream_id"] == removed["stream_id"]]
            state["subscriptions"] = [
                s for s in state["subscriptions"] if s["stream_id"] != removed["stream_id"]
            ]
            for sub in moved:
                if "subscribers" in sub:
                    own_id = state.get("user_id")
                    if sub["invite_only"] and not state.get("is_admin"):
                        sub["subscribers"] = []
                    else:
                        sub["subscribers"] = [u for u in sub["subscribers"] if u != own_id]
                state["unsubscribed"].append(sub)
    elif op == "update":
        for sub in state["subscriptions"]:
            if sub["stream_id"] == event["stream_id"]:
                sub[event["property"]] = event["value"]
                if event["property"] == "in_home_view":
                    sub["is_muted"] = not event["value"]
                elif event["property"] == "is_muted":
                    sub["in_home_view"] = not event["value"]
    elif op in ("peer_add", "peer_remove"):
        for stream_id in event["stream_ids"]:
            for key in SUBSCRIPTION_LISTS:
                for entry in state[key]:
                    if entry["stream_id"] != stream_id or "subscribers" not in entry:
                        continue
                    current = set(entry["subscribers"])
                    if op == "peer_add":
                        current |= set(event["user_ids"])
                    else:
                        current -= set(event["user_ids"])
                    entry["subscribers"] = sorted(current)
    for key in SUBSCRIPTION_LISTS:
        _by_name(state[key])


def _apply_stream(state: dict[str, Any], event: dict[str, Any], include_subscribers: bool) -> None:
    op = event["op"]
    if op == "create":
        for created in event["streams"]:
            if "streams" in state and all(
                s["stream_id"] != created["stream_id"] for s in state["streams"]
            ):
                state["streams"].append(dict(created))
            if "never_subscribed" in state and not any(
                s["stream_id"] == created["stream_id"]
                for key in SUBSCRIPTION_LISTS
                for s in state[key]
            ):
                entry = dict(created)
                if include_subscribers:
                    entry["subscribers"] = []
                state["never_subscribed"].append(entry)
    elif op == "delete":
        gone = set(event.get("stream_ids") or [s["stream_id"] for s in event["streams"]])
        for key in (*SUBSCRIPTION_LISTS, "streams"):
            if key in state:
                state[key] = [s for s in state[key] if s["stream_id"] not in gone]
        if "realm_default_streams" in state:
            state["realm_default_streams"] = [
                i for i in state["realm_default_streams"] if i not in gone
            ]
    elif op == "update":
        for entry in _entries(state, event["stream_id"]):
            entry[event["property"]] = event["value"]
            for extra in ("rendered_description", "history_public_to_subscribers", "is_web_public"):
                if extra in event:
                    entry[extra] = event[extra]
            if event["property"] == "stream_post_policy":
                entry["is_announcement_only"] = event["value"] == 2
    for key in (*SUBSCRIPTION_LISTS, "streams"):
        if key in state:
            _by_name(state[key])


def _apply_user_topic(state: dict[str, Any], event: dict[str, Any]) -> None:
    if "user_topics" not in state:
        return
    topic = event["topic_name"].lower()
    state["user_topics"] = [
        t
        for t in state["user_topics"]
        if not (t["stream_id"] == event["stream_id"] and t["topic_name"].lower() == topic)
    ]
    if event["visibility_policy"] != 0:
        state["user_topics"].append({k: v for k, v in event.items() if k not in ("id", "type")})
    _by_topic(state["user_topics"])


def apply_stream_event(
    state: dict[str, Any], event: dict[str, Any], *, include_subscribers: bool
) -> bool:
    """Apply one stream-related event; False when the event is not one of these."""
    kind = event["type"]
    if kind == "subscription":
        _apply_subscription(state, event, include_subscribers)
    elif kind == "stream":
        _apply_stream(state, event, include_subscribers)
    elif kind == "default_streams":
        if "realm_default_streams" in state:
            state["realm_default_streams"] = sorted(event["default_streams"])
    elif kind == "user_topic":
        _apply_user_topic(state, event)
    elif kind == "muted_topics":
        if "muted_topics" in state:
            state["muted_topics"] = event["muted_topics"]
    else:
        return False
    if "unread_msgs" in state and (
        kind == "user_topic"
        or (kind == "subscription" and event.get("property") in ("is_muted", "in_home_view"))
    ):
        # The unread count leaves out muted streams and topics.
        recount_unread(state)
    return True
