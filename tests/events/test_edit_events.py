"""``update_message`` (and, for moves, ``delete_message`` and topic-policy) events: their
shapes, who gets them with which flags, and that applying them to old /register state
(``unread_msgs``) gives the new state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import edit_message, send_direct_message, send_stream_message

_BULK: dict[str, Any] = {"client_capabilities": {"bulk_message_deletion": True}}


def _edit(env: TestEnv, user: str, message_id: int, **params: Any) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await edit_message(env, user, message_id, **params))

    return action


async def test_content_edit_event_and_mentions(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hi", "t")
    [event] = await verify_action(
        env, env.users["othello"], _edit(env, "hamlet", mid, content="hi @**Othello**")
    )
    assert set(event) == {
        "type",
        "id",
        "user_id",
        "edit_timestamp",
        "message_id",
        "message_ids",
        "rendering_only",
        "flags",
        "stream_name",
        "stream_id",
        "orig_content",
        "orig_rendered_content",
        "content",
        "rendered_content",
        "is_me_message",
    }
    assert event["type"] == "update_message" and event["rendering_only"] is False
    assert (event["user_id"], event["message_id"], event["message_ids"]) == (
        env.users["hamlet"].id,
        mid,
        [mid],
    )
    assert (event["stream_id"], event["stream_name"]) == (denmark.id, "Denmark")
    assert (event["orig_content"], event["orig_rendered_content"]) == ("hi", "<p>hi</p>")
    assert event["content"] == "hi @**Othello**"
    assert 'data-user-id="' in event["rendered_content"]
    assert event["flags"] == ["mentioned"] and event["is_me_message"] is False
    state = await register(env, env.users["othello"])
    assert state["unread_msgs"]["mentions"] == [mid]
    # Taking the mention out again takes it out of the state's mentions.
    await verify_action(env, env.users["othello"], _edit(env, "hamlet", mid, content="hi"))
    assert (await register(env, env.users["othello"]))["unread_msgs"]["mentions"] == []


async def test_each_user_gets_their_own_flags(env: TestEnv) -> None:
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hi", "t")
    # Iago subscribes later: no row, but the stream's history is his to read.
    await env.subscribe("iago", "Denmark")
    states = {name: await register(env, env.users[name]) for name in ("hamlet", "othello", "iago")}
    assert_success(
        await env.client("hamlet").patch(f"/messages/{mid}", {"content": "@**Othello** hi"})
    )
    flags = {}
    for name, state in states.items():
        [event] = await env.events(name, state)
        flags[name] = event["flags"]
    assert flags == {"hamlet": [], "othello": ["mentioned"], "iago": ["read"]}
    # Polonius, not subscribed, hears nothing.
    assert await env.events("polonius", await register(env, env.users["polonius"])) == []


async def test_topic_move_events_and_unread_state(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    ids = [await send_stream_message(env, "hamlet", "Denmark", f"m{i}", "t") for i in range(3)]
    await send_stream_message(env, "hamlet", "Denmark", "stays", "other")
    events = await verify_action(
        env,
        env.users["othello"],
        _edit(env, "hamlet", ids[1], topic="u", propagate_mode="change_later"),
    )
    [event] = [e for e in events if e["type"] == "update_message"]
    assert event["message_ids"] == ids[1:]
    assert (event["orig_subject"], event["subject"], event["topic_links"]) == ("t", "u", [])
    assert (event["propagate_mode"], event["stream_id"]) == ("change_later", denmark.id)
    assert "new_stream_id" not in event and "content" not in event
    state = await register(env, env.users["othello"])
    topics = {e["topic"]: e["unread_message_ids"] for e in state["unread_msgs"]["streams"]}
    assert topics["t"] == ids[:1] and topics["u"] == ids[1:]


async def test_muted_topic_moves_with_the_topic(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    ids = [await send_stream_message(env, "hamlet", "Denmark", f"m{i}", "t") for i in range(2)]
    assert_success(
        await env.client("othello").post(
            "/user_topics", {"stream_id": denmark.id, "topic": "t", "visibility_policy": 1}
        )
    )
    events = await verify_action(
        env,
        env.users["othello"],
        _edit(env, "hamlet", ids[0], topic="u", propagate_mode="change_all"),
    )
    kinds = [e["type"] for e in events]
    # The topic policy events come first, as in Zulip; then the edit.
    assert kinds[-1] == "update_message" and "user_topic" in kinds
    state = await register(env, env.users["othello"])
    assert [(t["topic_name"], t["visibility_policy"]) for t in state["user_topics"]] == [("u", 1)]
    assert state["unread_msgs"]["count"] == 0


async def test_stream_move_events(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    for name in ("othello", "polonius", "shiva"):
        await env.subscribe(name, "Denmark")
    await env.subscribe("othello", "Verona")
    ids = [await send_stream_message(env, "hamlet", "Denmark", f"m{i}", "t") for i in range(2)]
    move = _edit(env, "hamlet", ids[1], stream_id=verona.id, topic="moved")
    legacy = await register(env, env.users["polonius"])
    # Polonius, a guest not subscribed to Verona, loses access: for him the messages are
    # deleted (bulk form for queues with the capability, one event each otherwise).
    [deleted] = await verify_action(env, env.users["polonius"], move, **_BULK)
    assert deleted == {
        "type": "delete_message",
        "id": deleted["id"],
        "message_ids": [ids[1]],
        "message_type": "stream",
        "stream_id": denmark.id,
        "topic": "t",
    }
    [single] = await env.events("polonius", legacy)
    assert (single["type"], single["message_id"]) == ("delete_message", ids[1])
    assert "message_ids" not in single
    # Back, then the whole topic along, watching Othello (subscribed to both).
    await _edit(env, "hamlet", ids[1], stream_id=denmark.id, topic="t")()
    events = await verify_action(
        env,
        env.users["othello"],
        _edit(env, "hamlet", ids[0], stream_id=verona.id, propagate_mode="change_all"),
    )
    [event] = events
    assert event["new_stream_id"] == verona.id and event["message_ids"] == ids
    assert (event["stream_id"], event["orig_subject"]) == (denmark.id, "t")
    assert "subject" not in event and event["flags"] == []
    state = await register(env, env.users["othello"])
    assert [(e["stream_id"], e["topic"]) for e in state["unread_msgs"]["streams"]] == [
        (verona.id, "t")
    ]


async def test_losing_rows_on_a_public_stream(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    await env.subscribe("shiva", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hi", "t")
    # A newer message keeps Shiva's max_message_id (the newest message he has a row for)
    # in place: no event tells a client that it changed, in Zulip either.
    await send_stream_message(env, "hamlet", "Denmark", "newer", "other")
    # Shiva keeps access (Verona is public) but not his row: the message is no longer
    # unread for him, which the event's ["read"] flags say.
    [event] = await verify_action(
        env, env.users["shiva"], _edit(env, "hamlet", mid, stream_id=verona.id)
    )
    assert event["flags"] == ["read"]
    assert (await register(env, env.users["shiva"]))["unread_msgs"]["count"] == 1


async def test_direct_message_edit(env: TestEnv) -> None:
    mid = await send_direct_message(env, "hamlet", ["othello", "iago"], "hi")
    [event] = await verify_action(
        env, env.users["othello"], _edit(env, "hamlet", mid, content="hi @**Othello**")
    )
    assert event["flags"] == ["mentioned"]
    assert not {"stream_id", "stream_name", "propagate_mode", "orig_subject"} & set(event)
    state = await register(env, env.users["othello"])
    assert state["unread_msgs"]["mentions"] == [mid]
