"""``POST /typing`` and its ``typing`` events."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import recipient
from hubbub.queries.message_dicts import RECIPIENT_STREAM
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_error, assert_success, without_id


def _typing(env: TestEnv, user: str, **params: Any) -> Any:
    async def action() -> None:
        assert_success(await env.client(user).post("/typing", params))

    return action


async def test_direct_typing_events(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    for op in ("start", "stop"):
        events = await verify_action(
            env, othello, _typing(env, "hamlet", op=op, to=[othello.id]), num_events=1
        )
        assert without_id(events[0]) == {
            "type": "typing",
            "op": op,
            "message_type": "direct",
            "sender": {"user_id": hamlet.id, "email": hamlet.email},
            "recipients": [
                {"user_id": othello.id, "email": othello.email},
                {"user_id": hamlet.id, "email": hamlet.email},
            ],
        }
    # The typist hears of it too; others do not.
    await verify_action(
        env, hamlet, _typing(env, "hamlet", op="start", to=[othello.id]), num_events=1
    )
    await verify_action(
        env, env.users["iago"], _typing(env, "hamlet", op="start", to=[othello.id]), num_events=0
    )


async def test_stream_typing_needs_capability(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    othello = env.users["othello"]
    capable = await register(
        env, othello, client_capabilities={"stream_typing_notifications": True}
    )
    plain = await register(env, othello)
    assert_success(
        await env.client("hamlet").post(
            "/typing", {"type": "stream", "op": "start", "stream_id": denmark.id, "topic": "t"}
        )
    )
    [event] = await env.events("othello", capable)
    assert without_id(event) == {
        "type": "typing",
        "op": "start",
        "message_type": "stream",
        "sender": {"user_id": env.users["hamlet"].id, "email": env.users["hamlet"].email},
        "stream_id": denmark.id,
        "topic": "t",
    }
    assert await env.events("othello", plain) == []
    # Typing writes nothing: the stream's recipient row still waits for its first message.
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(recipient.c.id).where(
                recipient.c.type == RECIPIENT_STREAM, recipient.c.type_id == denmark.id
            )
        )
        assert rows.all() == []


async def test_errors(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    secret = await env.subscribe("iago", "Secret", invite_only=True)
    client = env.client("hamlet")
    cases: list[tuple[dict[str, Any], str, str]] = [
        ({"to": [env.users["othello"].id]}, "Missing 'op' argument", "REQUEST_VARIABLE_MISSING"),
        ({"op": "start"}, "Missing 'to' argument", "BAD_REQUEST"),
        ({"op": "start", "to": []}, "Empty 'to' list", "BAD_REQUEST"),
        ({"op": "start", "to": [99999]}, "Invalid user ID 99999", "BAD_REQUEST"),
        (
            {"op": "start", "type": "stream", "topic": "t"},
            "Missing 'stream_id' argument",
            "BAD_REQUEST",
        ),
        (
            {"op": "start", "type": "stream", "stream_id": denmark.id},
            "Missing topic",
            "BAD_REQUEST",
        ),
        (
            {"op": "start", "type": "stream", "stream_id": secret.id, "topic": "t"},
            "Invalid stream ID",
            "BAD_REQUEST",
        ),
    ]
    for params, msg, code in cases:
        assert_error(await client.post("/typing", params), msg, code=code)
    assert_success(await client.patch("/settings", {"send_stream_typing_notifications": False}))
    assert_error(
        await client.post(
            "/typing", {"op": "start", "type": "stream", "stream_id": denmark.id, "topic": "t"}
        ),
        "User has disabled typing notifications for channel messages",
    )
    assert_success(await client.patch("/settings", {"send_private_typing_notifications": False}))
    assert_error(
        await client.post("/typing", {"op": "start", "to": [env.users["othello"].id]}),
        "User has disabled typing notifications for direct messages",
    )


async def test_empty_topic_spellings(env: TestEnv) -> None:
    """ "(no topic)" (feature level 372) and the empty topic's display name (level 334)
    both mean the empty topic; "channel" (level 248) means a stream."""
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    othello = env.users["othello"]
    capable = await register(
        env,
        othello,
        client_capabilities={"stream_typing_notifications": True, "empty_topic_name": True},
    )
    plain = await register(env, othello, client_capabilities={"stream_typing_notifications": True})
    client = env.client("hamlet")
    sent = ["(no topic)", " general chat ", "", "(No topic)", " lunch"]
    for topic in sent:
        params = {"type": "channel", "op": "start", "stream_id": denmark.id, "topic": topic}
        assert_success(await client.post("/typing", params))
    # The name before Zulip 2.0 still works.
    params = {"type": "stream", "op": "start", "stream_id": denmark.id, "subject": "old"}
    assert_success(await client.post("/typing", params))
    seen = [e["topic"] for e in await env.events("othello", capable)]
    assert seen == ["", "", "", "(No topic)", "lunch", "old"]
    # A client without the capability is shown the display name instead.
    shown = [e["topic"] for e in await env.events("othello", plain)]
    empty = "general chat"
    assert shown == [empty, empty, empty, "(No topic)", "lunch", "old"]
