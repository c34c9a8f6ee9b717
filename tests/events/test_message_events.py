"""``message`` events: their shapes, who gets them, per-queue shaping, and that applying
them to old /register state (max_message_id, unread_msgs, starred_messages,
recent_private_conversations) gives the new state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import subscription
from hubbub.queries.messages import STARRED
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, add_user_message_flags, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message


def _stream(
    env: TestEnv, sender: str, content: str = "hi", topic: str = "t", **extra: Any
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        await send_stream_message(env, sender, "Denmark", content, topic, **extra)

    return action


def _direct(
    env: TestEnv, sender: str, to: list[str], content: str = "hi"
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        await send_direct_message(env, sender, to, content)

    return action


async def test_stream_message_event_shape(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    events = await verify_action(
        env,
        env.users["othello"],
        _stream(env, "hamlet", "**hi** @**Othello**"),
        num_events=3,
        apply_markdown=True,
    )
    event = events[0]
    # A mentioned user follows the topic (feature level 235), after the message event.
    assert [e["type"] for e in events] == ["message", "muted_topics", "user_topic"]
    assert (events[2]["topic_name"], events[2]["visibility_policy"]) == ("t", 3)
    assert event["type"] == "message"
    assert event["flags"] == ["mentioned"]
    msg = event["message"]
    hamlet = env.users["hamlet"]
    assert msg["content"].startswith("<p><strong>hi</strong>")
    assert msg["content_type"] == "text/html"
    assert (msg["display_recipient"], msg["subject"], msg["type"]) == ("Denmark", "t", "stream")
    assert (msg["sender_id"], msg["sender_email"], msg["sender_full_name"]) == (
        hamlet.id,
        hamlet.email,
        hamlet.full_name,
    )
    assert msg["avatar_url"] is None  # client_gravatar defaults to true on /register
    assert msg["reactions"] == [] and msg["submessages"] == [] and msg["topic_links"] == []
    assert "flags" not in msg and "local_message_id" not in event
    # The sender (an API client) gets it unread; a non-subscriber gets nothing.
    events = await verify_action(env, hamlet, _stream(env, "hamlet"), num_events=1)
    assert events[0]["flags"] == []
    # (Its /register state leaves out streams, whose first_message_id a non-subscriber
    # does not hear about, as in Zulip.)
    await verify_action(
        env, env.users["iago"], _stream(env, "hamlet"), num_events=0, event_types=["message"]
    )


async def test_queue_options_shape_events(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    raw = await register(env, env.users["othello"], apply_markdown=False, client_gravatar=False)
    mine = await register(env, env.users["hamlet"], event_types=["message"])
    other = await register(env, env.users["hamlet"], event_types=["message"])
    await send_stream_message(
        env, "hamlet", "Denmark", "**x**", queue_id=mine["queue_id"], local_id="1.01"
    )
    [event] = await env.events("othello", raw, check_spec=False)
    assert event["message"]["content"] == "**x**"
    assert event["message"]["content_type"] == "text/x-markdown"
    assert event["message"]["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
    [event] = await env.events("hamlet", mine, check_spec=False)
    assert event["local_message_id"] == "1.01"
    [event] = await env.events("hamlet", other, check_spec=False)
    assert "local_message_id" not in event
    assert not any(k.startswith("_") for k in event)


async def test_unread_and_mentions_state(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    othello = env.users["othello"]
    await verify_action(env, othello, _stream(env, "hamlet", "one"), num_events=1)
    await verify_action(env, othello, _stream(env, "hamlet", "@**Othello**", "other"), num_events=3)
    await verify_action(env, othello, _stream(env, "hamlet", "@**all**"), num_events=1)
    # Read messages do not count.
    await verify_action(
        env, env.users["hamlet"], _stream(env, "hamlet", read_by_sender=True), num_events=1
    )
    state = await register(env, othello)
    unread = state["unread_msgs"]
    assert unread["count"] == 4
    assert [(e["topic"], len(e["unread_message_ids"])) for e in unread["streams"]] == [
        ("t", 3),
        ("other", 1),
    ]
    assert len(unread["mentions"]) == 2
    assert unread["old_unreads_missing"] is False
    assert state["max_message_id"] == max(unread["streams"][0]["unread_message_ids"])


async def test_muted_stream_not_counted(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(subscription)
            .where(
                subscription.c.stream_id == denmark.id,
                subscription.c.user_profile_id == env.users["othello"].id,
            )
            .values(is_muted=True)
        )
    othello = env.users["othello"]
    await verify_action(env, othello, _stream(env, "hamlet", "@**all**"), num_events=1)
    state = await register(env, othello)
    assert state["unread_msgs"]["count"] == 0
    assert state["unread_msgs"]["mentions"] == []
    assert len(state["unread_msgs"]["streams"][0]["unread_message_ids"]) == 1


async def test_direct_message_state(env: TestEnv) -> None:
    hamlet, othello, iago = env.users["hamlet"], env.users["othello"], env.users["iago"]
    events = await verify_action(env, othello, _direct(env, "hamlet", ["othello"]), num_events=1)
    msg = events[0]["message"]
    assert msg["type"] == "private"
    assert [p["id"] for p in msg["display_recipient"]] == sorted([hamlet.id, othello.id])
    assert set(msg["display_recipient"][0]) == {"id", "email", "full_name", "is_mirror_dummy"}
    await verify_action(env, hamlet, _direct(env, "hamlet", ["othello"]), num_events=1)
    await verify_action(env, othello, _direct(env, "hamlet", ["othello", "iago"]), num_events=1)
    await verify_action(env, hamlet, _direct(env, "hamlet", ["hamlet"]), num_events=1)
    state = await register(env, othello)
    assert state["unread_msgs"]["pms"] == [
        {
            "other_user_id": hamlet.id,
            "sender_id": hamlet.id,
            "unread_message_ids": state["unread_msgs"]["pms"][0]["unread_message_ids"],
        }
    ]
    assert len(state["unread_msgs"]["pms"][0]["unread_message_ids"]) == 2
    ids = ",".join(str(u) for u in sorted([hamlet.id, othello.id, iago.id]))
    assert [h["user_ids_string"] for h in state["unread_msgs"]["huddles"]] == [ids]
    recent = (await register(env, hamlet))["recent_private_conversations"]
    assert [c["user_ids"] for c in recent] == [[], sorted([othello.id, iago.id]), [othello.id]]


async def test_starred_messages_state(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    async with env.services.db.write() as conn:
        await add_user_message_flags(conn, STARRED, message_ids=[message_id])
    state = await register(env, env.users["hamlet"])
    assert state["starred_messages"] == [message_id]
    assert "max_message_id" not in await register(
        env, env.users["hamlet"], fetch_event_types=["realm"]
    )


async def test_muting_recounts_unread_messages(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    stream_id = (await env.subscribe("othello", "Denmark")).id
    await send_stream_message(env, "hamlet", "Denmark", "unread for othello", "muteme")
    await send_stream_message(env, "hamlet", "Denmark", "another one", "other")
    params: dict[str, Any] = {
        "event_types": ["message", "update_message_flags", "subscription", "user_topic"]
    }

    async def mute_stream() -> None:
        assert_success(
            await env.client("othello").post(
                "/users/me/subscriptions/properties",
                {
                    "subscription_data": [
                        {"stream_id": stream_id, "property": "is_muted", "value": True}
                    ]
                },
            )
        )

    async def unmute_topic() -> None:
        assert_success(
            await env.client("othello").post(
                "/user_topics",
                {"stream_id": stream_id, "topic": "muteme", "visibility_policy": 2},
            )
        )

    for action, expected in ((mute_stream, 0), (unmute_topic, 1)):
        await verify_action(env, env.users["othello"], action, **params)
        state = await register(env, env.users["othello"], **params)
        assert state["unread_msgs"]["count"] == expected


async def test_event_message_is_the_fetched_message(env: TestEnv) -> None:
    """The sender builds the event's message from what it wrote (no read-back): it must be
    what ``GET /messages/{id}`` returns, for every kind of recipient and both renderings."""
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    assert_success(
        await env.client("iago").post(
            "/realm/filters",
            {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://example.com/{id}"},
        )
    )
    for apply_markdown in (True, False):
        states = {
            name: await register(
                env,
                env.users[name],
                event_types=["message"],
                apply_markdown=apply_markdown,
                client_gravatar=False,
            )
            for name in ("hamlet", "othello", "iago")
        }
        sends = [
            (_stream(env, "hamlet", "**bold** @**Othello** /me", topic="issue #12"), "othello"),
            (_stream(env, "hamlet", "/me waves"), "othello"),
            (_direct(env, "hamlet", ["othello"], "*one*"), "othello"),
            (_direct(env, "hamlet", ["hamlet"], "note to self"), "hamlet"),
            (_direct(env, "hamlet", ["othello", "iago"], "a group"), "iago"),
        ]
        for send, reader in sends:
            await send()
            events = await env.events(reader, states[reader], check_spec=False)
            states[reader]["last_event_id"] = events[-1]["id"]
            # The reader's queue also holds what it sent earlier: the newest is this one.
            sent = [e for e in events if e["type"] == "message"][-1]["message"]
            fetched = assert_success(
                await env.client(reader).get(
                    f"/messages/{sent['id']}", {"apply_markdown": apply_markdown}
                )
            )["message"]
            del fetched["flags"]
            assert sent == fetched
