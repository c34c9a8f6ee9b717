"""``reaction`` and ``submessage`` events: their shapes, who gets them, the topic
policies that reacting triggers, and that /register state stays equal to old state plus
the events (Zulip's ``verify_action``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.db.tables import stream
from hubbub.queries.messages import READ
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, add_user_message_flags, assert_success, without_id
from tests.messages_helpers import send_direct_message, send_stream_message

Action = Callable[[], Awaitable[None]]


def _react(env: TestEnv, user: str, message_id: int, **params: Any) -> Action:
    async def action() -> None:
        url = f"/messages/{message_id}/reactions"
        assert_success(await env.client(user).post(url, params))

    return action


def _unreact(env: TestEnv, user: str, message_id: int, **params: Any) -> Action:
    async def action() -> None:
        url = f"/messages/{message_id}/reactions"
        assert_success(await env.client(user).delete(url, params))

    return action


def _submit(env: TestEnv, user: str, message_id: int, content: dict[str, Any]) -> Action:
    async def action() -> None:
        params = {
            "message_id": message_id,
            "msg_type": "widget",
            "content": orjson.dumps(content).decode(),
        }
        assert_success(await env.client(user).post("/submessage", params))

    return action


async def _set(env: TestEnv, user: str, **settings: Any) -> None:
    assert_success(await env.client(user).patch("/settings", settings))


async def test_reaction_event_shape_and_state(env: TestEnv) -> None:
    message_id = await send_direct_message(env, "hamlet", ["othello"])
    othello, hamlet = env.users["othello"], env.users["hamlet"]
    iago_state = await register(env, env.users["iago"])
    events = await verify_action(
        env, hamlet, _react(env, "othello", message_id, emoji_name="like"), num_events=1
    )
    event = without_id(events[0])
    assert event == {
        "type": "reaction",
        "op": "add",
        "message_id": message_id,
        "emoji_name": "like",
        "emoji_code": "1f44d",
        "reaction_type": "unicode_emoji",
        "user_id": othello.id,
        "user": {"user_id": othello.id, "email": othello.email, "full_name": "Othello"},
    }
    # The reacting user hears of it too; removing by another name of the emoji names the
    # reaction as it was stored.
    events = await verify_action(
        env, othello, _unreact(env, "othello", message_id, emoji_name="+1"), num_events=1
    )
    assert (events[0]["op"], events[0]["emoji_name"], events[0]["user_id"]) == (
        "remove",
        "like",
        othello.id,
    )
    # A user with no access to the message hears nothing.
    assert await env.events("iago", iago_state) == []


async def test_stream_reaction_reaches_subscribers_with_history(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    # Othello subscribes after the message: no row, but a public history.
    await env.subscribe("othello", "Denmark")
    await verify_action(
        env,
        env.users["othello"],
        _react(env, "hamlet", message_id, emoji_name="tada"),
        num_events=1,
    )
    await env.subscribe("hamlet", "Secret", invite_only=True)
    secret_id = await send_stream_message(env, "hamlet", "Secret")
    secret = await env.subscribe("othello", "Secret")
    # A private stream without shared history: a later subscriber hears nothing...
    await verify_action(
        env, env.users["othello"], _react(env, "hamlet", secret_id, emoji_name="tada"), num_events=0
    )
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == secret.id)
            .values(history_public_to_subscribers=True)
        )
    # ...until the history is shared with subscribers.
    await verify_action(
        env,
        env.users["othello"],
        _react(env, "hamlet", secret_id, emoji_name="smile"),
        num_events=1,
    )


async def test_historical_reactor_gets_later_events(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    iago = env.users["iago"]
    # A newer message keeps iago's max_message_id where it is: /register derives it from
    # user_message rows, and (as in Zulip) no event reports the historical row, so a
    # reaction to a message newer than all of a user's rows moves it silently.
    await send_direct_message(env, "hamlet", ["iago"])
    events = await verify_action(
        env, iago, _react(env, "iago", message_id, emoji_name="smile"), num_events=1
    )
    assert events[0]["user_id"] == iago.id
    # The historical row makes iago a recipient of others' reactions to it.
    events = await verify_action(
        env, iago, _react(env, "hamlet", message_id, emoji_name="smile"), num_events=1
    )
    assert (events[0]["user_id"], events[0]["emoji_name"]) == (env.users["hamlet"].id, "smile")


async def test_reacting_follows_the_topic_on_participation(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", topic="lunch")
    othello = env.users["othello"]
    # The default policies (follow on initiation, unmute on send) ignore reactions.
    await verify_action(
        env, othello, _react(env, "othello", message_id, emoji_name="smile"), num_events=1
    )
    await _set(env, "othello", automatically_follow_topics_policy=1)
    events = await verify_action(
        env, othello, _react(env, "othello", message_id, emoji_name="tada"), num_events=3
    )
    assert [e["type"] for e in events] == ["muted_topics", "user_topic", "reaction"]
    assert (events[1]["topic_name"], events[1]["visibility_policy"]) == ("lunch", 3)
    # Already followed: nothing more to change.
    await verify_action(
        env, othello, _react(env, "othello", message_id, emoji_name="heart"), num_events=1
    )
    # Direct messages have no topic to follow.
    direct_id = await send_direct_message(env, "hamlet", ["othello"])
    await verify_action(
        env, othello, _react(env, "othello", direct_id, emoji_name="heart"), num_events=1
    )


async def test_reacting_unmutes_in_a_muted_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", topic="lunch")
    othello = env.users["othello"]
    # Read, so the unread count does not depend on the topic's policy: applying a
    # user_topic event does not recount unread_msgs yet (register/stream_state.py).
    async with env.services.db.write() as conn:
        await add_user_message_flags(conn, READ, user_id=othello.id)
    await _set(
        env,
        "othello",
        automatically_follow_topics_policy=4,
        automatically_unmute_topics_in_muted_streams_policy=1,
    )
    # Not muted: nothing to unmute.
    await verify_action(
        env, othello, _react(env, "othello", message_id, emoji_name="smile"), num_events=1
    )
    assert_success(
        await env.client("othello").post(
            "/users/me/subscriptions/properties",
            {
                "subscription_data": [
                    {"stream_id": denmark.id, "property": "is_muted", "value": True}
                ]
            },
        )
    )
    events = await verify_action(
        env, othello, _react(env, "othello", message_id, emoji_name="tada"), num_events=3
    )
    assert (events[1]["type"], events[1]["visibility_policy"]) == ("user_topic", 2)


async def test_submessage_event(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", "/poll Lunch?")
    # Subscribed after the message: no row, so no submessage events (unlike reactions).
    await env.subscribe("iago", "Denmark")
    iago_state = await register(env, env.users["iago"])
    widget = {"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": []}}
    events = await verify_action(
        env, env.users["othello"], _submit(env, "hamlet", message_id, widget), num_events=1
    )
    event = without_id(events[0])
    assert isinstance(event.pop("submessage_id"), int)
    assert event == {
        "type": "submessage",
        "msg_type": "widget",
        "message_id": message_id,
        "sender_id": env.users["hamlet"].id,
        "content": orjson.dumps(widget).decode(),
    }
    vote = {"type": "vote", "key": "canned,0", "vote": 1}
    await verify_action(
        env, env.users["hamlet"], _submit(env, "othello", message_id, vote), num_events=1
    )
    assert await env.events("iago", iago_state) == []
    # Voting is participation too.
    await _set(env, "othello", automatically_follow_topics_policy=1)
    events = await verify_action(
        env, env.users["othello"], _submit(env, "othello", message_id, vote), num_events=3
    )
    assert [e["type"] for e in events] == ["muted_topics", "user_topic", "submessage"]
