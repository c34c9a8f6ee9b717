"""``GET /messages/{message_id}``."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.db.tables import message, stream
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message


async def test_get_own_stream_message(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", "**hi** @**Othello**", "lunch")
    body = assert_success(await env.client("othello").get(f"/messages/{message_id}"))
    msg = body["message"]
    assert body["raw_content"] == "**hi** @**Othello**"
    assert msg["content"].startswith("<p><strong>hi</strong>")
    assert msg["content_type"] == "text/html"
    assert msg["flags"] == ["mentioned"]
    assert (msg["id"], msg["subject"], msg["display_recipient"]) == (message_id, "lunch", "Denmark")
    assert msg["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
    assert "edit_history" not in msg and "last_edit_timestamp" not in msg
    body = assert_success(
        await env.client("othello").get(f"/messages/{message_id}", {"apply_markdown": False})
    )
    assert body["message"]["content"] == "**hi** @**Othello**"
    assert body["message"]["content_type"] == "text/x-markdown"


async def test_edited_message_shows_history(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    history = (
        '[{"prev_content": "old", "prev_rendered_content": "<p>old</p>",'
        ' "timestamp": 5, "user_id": 1}]'
    )
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(message)
            .where(message.c.id == message_id)
            .values(last_edit_time=5.5, edit_history=history)
        )
    msg = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))["message"]
    assert msg["last_edit_timestamp"] == 5
    assert msg["edit_history"][0]["prev_content"] == "old"


async def test_public_stream_history_is_readable(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    # iago has no row: the message is in a public stream, so it reads as historical.
    msg = assert_success(await env.client("iago").get(f"/messages/{message_id}"))["message"]
    assert msg["flags"] == ["read", "historical"]
    # A guest may not read public streams they are not subscribed to.
    assert_error(await env.client("polonius").get(f"/messages/{message_id}"), "Invalid message(s)")


async def test_private_stream_history(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Secret", invite_only=True)
    message_id = await send_stream_message(env, "hamlet", "Secret")
    assert_error(await env.client("othello").get(f"/messages/{message_id}"), "Invalid message(s)")
    # Subscribed later: readable only once the stream shares its history.
    secret = await env.subscribe("othello", "Secret")
    assert_error(await env.client("othello").get(f"/messages/{message_id}"), "Invalid message(s)")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == secret.id)
            .values(history_public_to_subscribers=True)
        )
    msg = assert_success(await env.client("othello").get(f"/messages/{message_id}"))["message"]
    assert msg["flags"] == ["read", "historical"]


async def test_direct_message_access(env: TestEnv) -> None:
    message_id = await send_direct_message(env, "hamlet", ["othello"])
    msg = assert_success(await env.client("othello").get(f"/messages/{message_id}"))["message"]
    assert msg["type"] == "private"
    assert msg["flags"] == []
    assert_error(await env.client("iago").get(f"/messages/{message_id}"), "Invalid message(s)")
    assert_error(await env.client("iago").get("/messages/99999"), "Invalid message(s)")
