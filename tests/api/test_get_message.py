"""``GET /messages/{message_id}``."""

from __future__ import annotations

import orjson
import sqlalchemy as sa

from hubbub.db.tables import message, stream, user_profile
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


async def test_reactions_submessages_and_topic_links(env: TestEnv) -> None:
    # The statement that finds the message says which of these there are to read.
    await env.subscribe("hamlet", "Denmark")
    plain = await send_stream_message(env, "hamlet", "Denmark", "plain", "issue #12")
    widget = await send_stream_message(env, "hamlet", "Denmark", "/poll Lunch?", "issue #12")
    hamlet = env.client("hamlet")
    shown = assert_success(await hamlet.get(f"/messages/{widget}"))["message"]
    assert (shown["reactions"], shown["submessages"], shown["topic_links"]) == ([], [], [])
    assert_success(await hamlet.post(f"/messages/{widget}/reactions", {"emoji_name": "octopus"}))
    poll = {"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": []}}
    submission = {
        "message_id": widget,
        "msg_type": "widget",
        "content": orjson.dumps(poll).decode(),
    }
    assert_success(await hamlet.post("/submessage", submission))
    linkifier = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://example.com/{id}"}
    assert_success(await env.client("iago").post("/realm/filters", linkifier))
    shown = assert_success(await hamlet.get(f"/messages/{widget}"))["message"]
    assert [r["emoji_name"] for r in shown["reactions"]] == ["octopus"]
    assert [orjson.loads(s["content"]) for s in shown["submessages"]] == [poll]
    assert shown["topic_links"] == [{"text": "#12", "url": "https://example.com/12"}]
    shown = assert_success(await hamlet.get(f"/messages/{plain}"))["message"]
    assert (shown["reactions"], shown["submessages"]) == ([], [])
    assert shown["topic_links"] == [{"text": "#12", "url": "https://example.com/12"}]


async def test_sender_shown_as_now(env: TestEnv) -> None:
    # The realm's users are kept per process; the message's statement reads the version
    # that says whether the kept ones are current.
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    othello = env.client("othello")
    shown = assert_success(await othello.get(f"/messages/{message_id}"))["message"]
    assert shown["sender_full_name"] == env.users["hamlet"].full_name
    hamlet_id = env.users["hamlet"].id
    await env.write_elsewhere(
        sa.update(user_profile).where(user_profile.c.id == hamlet_id).values(full_name="Prince")
    )
    shown = assert_success(await othello.get(f"/messages/{message_id}"))["message"]
    assert shown["sender_full_name"] == "Prince"


async def test_message_of_another_realm(env: TestEnv) -> None:
    zephyr = await env.create_realm("zephyr", "Zephyr")
    zoe = await env.create_user("zoe@zephyr.example", "Zoe", realm=zephyr)
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    client = env.client(zoe, host="zephyr.localhost")
    assert_error(await client.get(f"/messages/{message_id}"), "Invalid message(s)")


async def test_id_beyond_32_bits(env: TestEnv) -> None:
    # An id column is 32-bit on PostgreSQL, which refuses the value in the request's own
    # read transaction; SQLite's are 64-bit, and there is no such message.
    response = await env.client("hamlet").get(f"/messages/{2**31}")
    on_postgresql = env.services.db.dialect_name == "postgresql"
    assert_error(response, "Invalid message_id" if on_postgresql else "Invalid message(s)")
