"""``update_message_flags`` events: their shapes, that only the acting user gets them, and
that applying them to old /register state (``unread_msgs``, ``starred_messages``) gives the
new state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import subscription
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message

# What a client that keeps unread counts registers for; realm_user brings ``user_id``,
# which placing direct messages among the unreads needs.
EVENT_TYPES = [
    "message",
    "update_message_flags",
    "subscription",
    "user_topic",
    "starred_messages",
    "realm_user",
]


def _post(
    env: TestEnv, user: str, path: str, params: dict[str, Any] | None = None
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client(user).post(path, params))

    return action


def _flags(
    env: TestEnv, user: str, op: str, flag: str, ids: list[int]
) -> Callable[[], Awaitable[None]]:
    return _post(env, user, "/messages/flags", {"messages": ids, "op": op, "flag": flag})


async def _verify(env: TestEnv, user: str, action: Callable[[], Awaitable[None]]) -> dict[str, Any]:
    [event] = await verify_action(
        env, env.users[user], action, num_events=1, event_types=EVENT_TYPES
    )
    return event


async def _conversations(env: TestEnv) -> dict[str, int]:
    for user in ("hamlet", "othello", "iago"):
        await env.subscribe(user, "Denmark")
    return {
        "stream": await send_stream_message(env, "hamlet", "Denmark", "hi", "lunch"),
        "mention": await send_stream_message(env, "hamlet", "Denmark", "@**Othello**", "work"),
        "wildcard": await send_stream_message(env, "hamlet", "Denmark", "@**all**", "party"),
        "dm": await send_direct_message(env, "hamlet", ["othello"]),
        "group": await send_direct_message(env, "hamlet", ["othello", "iago"]),
        "self": await send_direct_message(env, "othello", ["othello"]),
    }


async def test_star_events(env: TestEnv) -> None:
    ids = await _conversations(env)
    event = await _verify(
        env, "othello", _flags(env, "othello", "add", "starred", [ids["dm"], ids["stream"]])
    )
    assert event == {
        "type": "update_message_flags",
        "op": "add",
        "operation": "add",
        "flag": "starred",
        "messages": [ids["dm"], ids["stream"]],
        "all": False,
        "id": event["id"],
    }
    # Already starred: not reported again.
    event = await _verify(
        env, "othello", _flags(env, "othello", "add", "starred", [ids["stream"], ids["group"]])
    )
    assert event["messages"] == [ids["group"]]
    event = await _verify(
        env, "othello", _flags(env, "othello", "remove", "starred", [ids["stream"]])
    )
    assert (event["op"], event["operation"], event["all"]) == ("remove", "remove", False)
    assert "message_details" not in event
    state = await register(env, env.users["othello"], event_types=EVENT_TYPES)
    assert state["starred_messages"] == sorted([ids["dm"], ids["group"]])
    # Collapsing changes no /register state, but is reported.
    event = await _verify(env, "othello", _flags(env, "othello", "add", "collapsed", [ids["dm"]]))
    assert (event["flag"], event["messages"]) == ("collapsed", [ids["dm"]])


async def test_read_and_unread_round_trip(env: TestEnv) -> None:
    ids = await _conversations(env)
    everything = list(ids.values())
    event = await _verify(env, "othello", _flags(env, "othello", "add", "read", everything))
    assert event["messages"] == everything
    state = await register(env, env.users["othello"], event_types=EVENT_TYPES)
    assert state["unread_msgs"]["count"] == 0
    event = await _verify(env, "othello", _flags(env, "othello", "remove", "read", everything))
    othello, hamlet, iago = (env.users[n].id for n in ("othello", "hamlet", "iago"))
    denmark = event["message_details"][str(ids["stream"])]["stream_id"]
    assert event["message_details"] == {
        str(ids["stream"]): {
            "type": "stream",
            "stream_id": denmark,
            "topic": "lunch",
            "unmuted_stream_msg": True,
        },
        str(ids["mention"]): {
            "type": "stream",
            "stream_id": denmark,
            "topic": "work",
            "unmuted_stream_msg": True,
            "mentioned": True,
        },
        str(ids["wildcard"]): {
            "type": "stream",
            "stream_id": denmark,
            "topic": "party",
            "unmuted_stream_msg": True,
            "mentioned": True,
        },
        str(ids["dm"]): {"type": "private", "user_ids": [hamlet]},
        str(ids["group"]): {"type": "private", "user_ids": sorted([hamlet, iago])},
        str(ids["self"]): {"type": "private", "user_ids": []},
    }
    state = await register(env, env.users["othello"], event_types=EVENT_TYPES)
    assert state["unread_msgs"]["count"] == 6
    assert state["unread_msgs"]["mentions"] == [ids["mention"], ids["wildcard"]]
    group = ",".join(str(uid) for uid in sorted([othello, hamlet, iago]))
    assert [h["user_ids_string"] for h in state["unread_msgs"]["huddles"]] == [group]
    assert [p["other_user_id"] for p in state["unread_msgs"]["pms"]] == sorted([hamlet, othello])


async def test_muted_conversations(env: TestEnv) -> None:
    ids = await _conversations(env)
    othello = env.users["othello"]
    denmark = (await env.subscribe("othello", "Denmark")).id
    # Mute the topic "party" (where @all was) and then the whole stream, but follow "work".
    for topic, policy in [("party", 1), ("work", 3)]:
        assert_success(
            await env.client("othello").post(
                "/user_topics",
                {"stream_id": denmark, "topic": topic, "visibility_policy": policy},
            )
        )
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(subscription)
            .where(
                subscription.c.stream_id == denmark, subscription.c.user_profile_id == othello.id
            )
            .values(is_muted=True)
        )
    await _verify(env, "othello", _flags(env, "othello", "add", "read", [ids["stream"], ids["dm"]]))
    event = await _verify(
        env, "othello", _flags(env, "othello", "remove", "read", [ids["stream"], ids["dm"]])
    )
    assert event["message_details"][str(ids["stream"])]["unmuted_stream_msg"] is False
    await _verify(env, "othello", _flags(env, "othello", "add", "read", [ids["wildcard"]]))
    event = await _verify(
        env, "othello", _flags(env, "othello", "remove", "read", [ids["wildcard"]])
    )
    # A wildcard mention in a muted topic is not a mention.
    assert event["message_details"][str(ids["wildcard"])] == {
        "type": "stream",
        "stream_id": denmark,
        "topic": "party",
        "unmuted_stream_msg": False,
    }
    state = await register(env, othello, event_types=EVENT_TYPES)
    # Counted: "work" (followed), the three direct messages.
    assert state["unread_msgs"]["count"] == 4


async def test_mark_all_as_read_event(env: TestEnv) -> None:
    ids = await _conversations(env)
    await _verify(env, "othello", _flags(env, "othello", "add", "starred", [ids["dm"]]))
    event = await _verify(env, "othello", _post(env, "othello", "/mark_all_as_read"))
    assert event == {
        "type": "update_message_flags",
        "op": "add",
        "operation": "add",
        "flag": "read",
        "messages": [],
        "all": True,
        "id": event["id"],
    }
    state = await register(env, env.users["othello"], event_types=EVENT_TYPES)
    assert state["unread_msgs"]["count"] == 0
    assert state["starred_messages"] == [ids["dm"]]


async def test_stream_and_topic_events(env: TestEnv) -> None:
    ids = await _conversations(env)
    denmark = (await env.subscribe("othello", "Denmark")).id
    event = await _verify(
        env,
        "othello",
        _post(env, "othello", "/mark_topic_as_read", {"stream_id": denmark, "topic_name": "WORK"}),
    )
    assert (event["messages"], event["all"]) == ([ids["mention"]], False)
    event = await _verify(
        env, "othello", _post(env, "othello", "/mark_stream_as_read", {"stream_id": denmark})
    )
    assert event["messages"] == [ids["stream"], ids["wildcard"]]
    # Nothing left to mark: no event at all, as in Zulip.
    await verify_action(
        env,
        env.users["othello"],
        _post(env, "othello", "/mark_stream_as_read", {"stream_id": denmark}),
        num_events=0,
        event_types=EVENT_TYPES,
    )


async def test_narrow_events(env: TestEnv) -> None:
    ids = await _conversations(env)
    params = {
        "anchor": "oldest",
        "num_before": 0,
        "num_after": 10,
        "narrow": [{"operator": "is", "operand": "dm"}],
        "op": "add",
        "flag": "read",
    }
    event = await _verify(env, "othello", _post(env, "othello", "/messages/flags/narrow", params))
    assert event["messages"] == [ids["dm"], ids["group"], ids["self"]]
    event = await _verify(
        env, "othello", _post(env, "othello", "/messages/flags/narrow", params | {"op": "remove"})
    )
    assert sorted(event["message_details"]) == sorted(str(ids[k]) for k in ("dm", "group", "self"))
    # A history star by a non-subscriber: the event, and starred_messages, include it.
    await env.subscribe("desdemona", "Scotland")
    scotland = await send_stream_message(env, "desdemona", "Scotland")
    stars = params | {"narrow": [{"operator": "stream", "operand": "Scotland"}], "flag": "starred"}
    event = await _verify(env, "othello", _post(env, "othello", "/messages/flags/narrow", stars))
    assert event["messages"] == [scotland]


async def test_only_the_acting_user_hears(env: TestEnv) -> None:
    ids = await _conversations(env)
    for other in ("hamlet", "iago"):
        await verify_action(
            env,
            env.users[other],
            _flags(env, "othello", "add", "starred", [ids["group"]]),
            num_events=0,
            event_types=EVENT_TYPES,
        )
    # A request that changes nothing still tells the user (Zulip sends the event).
    event = await _verify(env, "othello", _flags(env, "othello", "add", "starred", [ids["group"]]))
    assert event["messages"] == []
