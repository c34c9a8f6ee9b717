"""``POST /messages`` and ``POST /messages/render``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub import rendering
from hubbub.db.tables import message, stream, user_message
from hubbub.markdown import render_markdown
from hubbub.queries.messages import (
    GROUP_MENTIONED,
    HAS_ALERT_WORD,
    HISTORICAL,
    IS_PRIVATE,
    MENTIONED,
    READ,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
)
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message


async def _count(env: TestEnv) -> tuple[int, int]:
    async with env.services.db.read() as conn:
        messages = (await conn.execute(sa.select(sa.func.count()).select_from(message))).scalar()
        rows = (await conn.execute(sa.select(sa.func.count()).select_from(user_message))).scalar()
    return int(messages or 0), int(rows or 0)


async def _message(env: TestEnv, message_id: int) -> Any:
    async with env.services.db.read() as conn:
        return (await conn.execute(sa.select(message).where(message.c.id == message_id))).one()


async def _post(env: TestEnv, user: str, **params: Any) -> Any:
    return await env.client(user).post("/messages", params)


async def test_stream_message_rows_and_flags(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    await env.subscribe("iago", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", "hi @**Othello**", "lunch")
    row = await _message(env, message_id)
    assert (row.topic, row.content, row.sending_client) == (
        "lunch",
        "hi @**Othello**",
        "HubbubTests",
    )
    assert "user-mention" in row.rendered_content
    users = env.users
    # An API client does not mark the sender's own message read (Zulip's heuristic).
    assert await message_flags(env, message_id) == {
        users["hamlet"].id: 0,
        users["othello"].id: MENTIONED,
        users["iago"].id: 0,
    }
    async with env.services.db.read() as conn:
        first = (
            await conn.execute(
                sa.select(stream.c.first_message_id).where(stream.c.id == denmark.id)
            )
        ).scalar()
    assert first == message_id
    # Later messages keep the stream's first_message_id.
    await send_stream_message(env, "hamlet", "Denmark")
    async with env.services.db.read() as conn:
        first = (
            await conn.execute(
                sa.select(stream.c.first_message_id).where(stream.c.id == denmark.id)
            )
        ).scalar()
    assert first == message_id


async def test_stream_by_id_subject_alias_and_list_to(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    body = assert_success(
        await _post(env, "hamlet", type="stream", to=denmark.id, subject="s", content="x")
    )
    assert (await _message(env, body["id"])).topic == "s"
    # The legacy one-element list, and "channel" (feature level 248 clients).
    body = assert_success(
        await _post(env, "hamlet", type="channel", to='["Denmark"]', topic="t", content="x")
    )
    assert (await _message(env, body["id"])).topic == "t"
    assert_error(
        await _post(
            env, "hamlet", type="stream", to="Denmark", topic="a", subject="b", content="x"
        ),
        "Can't decide between 'topic' and 'subject' arguments",
        code="REQUEST_CONFUSING_VAR",
    )


async def test_read_by_sender(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"].id
    mid = await send_stream_message(env, "hamlet", "Denmark", read_by_sender=True)
    assert (await message_flags(env, mid))[hamlet] == READ
    mid = await send_stream_message(env, "hamlet", "Denmark", read_by_sender=False)
    assert (await message_flags(env, mid))[hamlet] == 0
    # An interactive client's messages start read for the sender.
    client = env.client("hamlet", headers={"User-Agent": "ZulipMobile/27.1"})
    body = assert_success(
        await client.post(
            "/messages", {"type": "stream", "to": "Denmark", "topic": "t", "content": "x"}
        )
    )
    assert (await message_flags(env, body["id"]))[hamlet] == READ


async def test_unsubscribed_sender_gets_historical_row(env: TestEnv) -> None:
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark")
    assert await message_flags(env, mid) == {
        env.users["hamlet"].id: HISTORICAL,
        env.users["othello"].id: 0,
    }


async def test_direct_messages(env: TestEnv) -> None:
    users = env.users
    mid = await send_direct_message(env, "hamlet", ["othello"])
    assert await message_flags(env, mid) == {
        users["hamlet"].id: IS_PRIVATE,
        users["othello"].id: IS_PRIVATE,
    }
    # Emails, comma-separated, and a group conversation.
    body = assert_success(
        await _post(
            env, "hamlet", type="private", to="othello@example.com, iago@example.com", content="x"
        )
    )
    assert set(await message_flags(env, body["id"])) == {
        users["hamlet"].id,
        users["othello"].id,
        users["iago"].id,
    }
    again = assert_success(
        await _post(
            env,
            "iago",
            type="direct",
            to='["hamlet@example.com", "othello@example.com"]',
            content="y",
        )
    )
    # The same three people meet in the same conversation.
    assert (await _message(env, again["id"])).recipient_id == (
        await _message(env, body["id"])
    ).recipient_id
    # To oneself.
    mid = await send_direct_message(env, "hamlet", ["hamlet"])
    assert await message_flags(env, mid) == {users["hamlet"].id: IS_PRIVATE}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_send_renders_before_taking_sqlites_writer(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite has one writer, which every write waits for: a send renders its content
    first (``render_send``) and holds the writer only for the writes and the reads they
    depend on."""
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    assert_success(
        await env.client("othello").post("/users/me/alert_words", {"alert_words": ["castle"]})
    )
    rendered = asyncio.Event()
    # Sends render through ``rendering`` (in a worker thread when long).
    real_render = render_markdown

    def render(content: str, ctx: Any) -> Any:
        rendered.set()
        return real_render(content, ctx)

    monkeypatch.setattr(rendering, "render_markdown", render)
    async with env.services.db.write():
        sending = asyncio.create_task(
            send_stream_message(env, "hamlet", "Denmark", "**the castle**")
        )
        await asyncio.wait_for(rendered.wait(), 5)
        await asyncio.sleep(0.05)
        assert not sending.done()  # its writes wait for the writer
    mid = await sending
    row = await _message(env, mid)
    assert row.rendered_content == "<p><strong>the castle</strong></p>"
    # The recipients' alert words are matched once they are known, under the writer.
    flags = await message_flags(env, mid)
    assert flags == {env.users["hamlet"].id: 0, env.users["othello"].id: HAS_ALERT_WORD}


# "channel" is a wildcard since feature level 247.
@pytest.mark.parametrize("word", ["all", "channel"])
async def test_wildcard_and_alert_words(env: TestEnv, word: str) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    assert_success(
        await env.client("othello").post("/users/me/alert_words", {"alert_words": ["castle"]})
    )
    mid = await send_stream_message(env, "hamlet", "Denmark", f"@**{word}** the castle")
    flags = await message_flags(env, mid)
    assert flags[env.users["othello"].id] == STREAM_WILDCARD_MENTIONED | HAS_ALERT_WORD
    assert flags[env.users["hamlet"].id] == STREAM_WILDCARD_MENTIONED


async def test_each_recipients_flags(env: TestEnv) -> None:
    """Every way content reaches a recipient, in one send; a mentioned or grouped user
    who is not a recipient gets no row."""
    for name in ("hamlet", "othello", "iago", "shiva"):
        await env.subscribe(name, "Denmark")
    users = env.users
    assert_success(
        await env.client("iago").post("/users/me/alert_words", {"alert_words": ["castle"]})
    )
    assert_success(await env.client("othello").post(f"/users/me/muted_users/{users['hamlet'].id}"))
    assert_success(
        await env.client("iago").post(
            "/user_groups/create",
            {
                "name": "mods",
                "description": "",
                "members": [users["shiva"].id, users["desdemona"].id],
            },
        )
    )
    mid = await send_stream_message(
        env,
        "hamlet",
        "Denmark",
        "@**Othello** @**Desdemona** @*mods* @**topic** the Castle",
        read_by_sender="true",
    )
    assert await message_flags(env, mid) == {
        # The sender is the topic's one participant.
        users["hamlet"].id: READ | TOPIC_WILDCARD_MENTIONED,
        # Mentioned, and muting the sender: the message arrives read.
        users["othello"].id: MENTIONED | READ,
        users["iago"].id: HAS_ALERT_WORD,
        users["shiva"].id: GROUP_MENTIONED | MENTIONED,
    }
    # Not subscribed, so not read by the sender either: historical.
    mid = await send_stream_message(env, "desdemona", "Denmark", "hi", read_by_sender="false")
    flags = await message_flags(env, mid)
    assert flags[users["desdemona"].id] == HISTORICAL
    assert set(flags.values()) == {0, HISTORICAL}


async def test_content_and_topic_normalization(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "x" * 10050, "t" * 70)
    row = await _message(env, mid)
    assert len(row.content) == 10000
    assert row.content.endswith("\n[message truncated]")
    assert row.topic == "t" * 57 + "..."
    mid = await send_stream_message(env, "hamlet", "Denmark", "\n\nhi  \n", " spaced ")
    row = await _message(env, mid)
    assert (row.content, row.topic) == ("hi", "spaced")


async def test_errors_change_nothing(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("iago", "Secret", invite_only=True)
    before = await _count(env)
    cases: list[tuple[dict[str, Any], str, str]] = [
        (
            {"type": "stream", "to": "Denmark", "topic": "t", "content": " \n "},
            "Message must not be empty",
            "BAD_REQUEST",
        ),
        ({"type": "stream", "to": "Denmark", "content": "x"}, "Missing topic", "BAD_REQUEST"),
        (
            # A blank topic is the empty topic (feature level 334); a control character
            # is refused.
            {"type": "stream", "to": "Denmark", "topic": "lunch\x07", "content": "x"},
            "Invalid character in topic, at position 6!",
            "BAD_REQUEST",
        ),
        (
            {"type": "stream", "to": "Nowhere", "topic": "t", "content": "x"},
            "Stream 'Nowhere' does not exist",
            "STREAM_DOES_NOT_EXIST",
        ),
        (
            {"type": "stream", "to": 9999, "topic": "t", "content": "x"},
            "Stream with ID '9999' does not exist",
            "STREAM_DOES_NOT_EXIST",
        ),
        (
            {"type": "stream", "to": '["a", "b"]', "topic": "t", "content": "x"},
            "Expected exactly one stream",
            "BAD_REQUEST",
        ),
        (
            {"type": "stream", "to": "Secret", "topic": "t", "content": "x"},
            "Not authorized to send to stream 'Secret'",
            "BAD_REQUEST",
        ),
        ({"type": "direct", "to": "[9999]", "content": "x"}, "Invalid user ID 9999", "BAD_REQUEST"),
        (
            {"type": "direct", "to": '["nobody@example.com"]', "content": "x"},
            "Invalid email 'nobody@example.com'",
            "BAD_REQUEST",
        ),
        (
            {"type": "direct", "to": '[1, "a@b.c"]', "content": "x"},
            "Recipient lists may contain emails or user IDs, but not both.",
            "BAD_REQUEST",
        ),
        (
            {"type": "direct", "to": '{"a": 1}', "content": "x"},
            "Invalid data type for recipients",
            "BAD_REQUEST",
        ),
        (
            {"type": "broadcast", "to": "Denmark", "content": "x"},
            "Invalid message type",
            "BAD_REQUEST",
        ),
        ({"to": "Denmark", "content": "x"}, "Missing 'type' argument", "REQUEST_VARIABLE_MISSING"),
    ]
    for params, msg, code in cases:
        assert_error(await _post(env, "hamlet", **params), msg, code=code)
    assert await _count(env) == before


async def test_guest_and_post_policy(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    assert_error(
        await _post(env, "polonius", type="stream", to="Denmark", topic="t", content="x"),
        "Not authorized to send to stream 'Denmark'",
    )
    await env.subscribe("polonius", "Denmark")
    assert_success(
        await _post(env, "polonius", type="stream", to="Denmark", topic="t", content="x")
    )
    patch = {"stream_post_policy": 2}
    assert_success(await env.client("iago").patch(f"/streams/{denmark.id}", patch))
    assert_error(
        await _post(env, "hamlet", type="stream", to="Denmark", topic="t", content="x"),
        "You do not have permission to post in this channel.",
    )
    assert_success(await _post(env, "iago", type="stream", to="Denmark", topic="t", content="x"))
    patch = {"stream_post_policy": 4}
    assert_success(await env.client("iago").patch(f"/streams/{denmark.id}", patch))
    assert_error(
        await _post(env, "hamlet", type="stream", to="Denmark", topic="t", content="x"),
        "You do not have permission to post in this channel.",
    )
    assert_success(await _post(env, "shiva", type="stream", to="Denmark", topic="t", content="x"))
    patch = {"stream_post_policy": 3}
    assert_success(await env.client("iago").patch(f"/streams/{denmark.id}", patch))
    assert_error(
        await _post(env, "polonius", type="stream", to="Denmark", topic="t", content="x"),
        "You do not have permission to post in this channel.",
    )


async def test_direct_message_policy_and_deactivated(env: TestEnv) -> None:
    await set_group_setting(env, "direct_message_permission_group", "role:nobody")
    assert_error(
        await _post(env, "hamlet", type="direct", to=[env.users["othello"].id], content="x"),
        "Direct messages are disabled in this organization.",
    )
    # Writing to oneself stays allowed.
    assert_success(
        await _post(env, "hamlet", type="direct", to=[env.users["hamlet"].id], content="x")
    )
    await set_group_setting(env, "direct_message_permission_group", "role:everyone")
    assert_success(await env.client("iago").delete(f"/users/{env.users['othello'].id}"))
    assert_error(
        await _post(env, "hamlet", type="direct", to=[env.users["othello"].id], content="x"),
        "'othello@example.com' is no longer using Zulip.",
    )


async def test_render(env: TestEnv) -> None:
    body = assert_success(
        await env.client("hamlet").post("/messages/render", {"content": "**foo** @**Othello**"})
    )
    assert body["rendered"].startswith('<p><strong>foo</strong> <span class="user-mention"')
    assert_error(
        await env.client("hamlet").post("/messages/render", {}),
        "Missing 'content' argument",
        code="REQUEST_VARIABLE_MISSING",
    )


async def test_automatic_follow_on_initiation(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    body = assert_success(
        await _post(env, "hamlet", type="stream", to="Denmark", topic="new", content="x")
    )
    # Zulip 8.0's default: starting a topic follows it (feature level 218 reports it).
    assert body["automatic_new_visibility_policy"] == 3
    topics = assert_success(await env.client("hamlet").post("/register", {}))["user_topics"]
    assert [(t["stream_id"], t["topic_name"], t["visibility_policy"]) for t in topics] == [
        (denmark.id, "new", 3)
    ]
    # Later messages change nothing; neither does a topic someone else started.
    body = assert_success(
        await _post(env, "hamlet", type="stream", to="Denmark", topic="new", content="y")
    )
    assert "automatic_new_visibility_policy" not in body
    await env.subscribe("othello", "Denmark")
    body = assert_success(
        await _post(env, "othello", type="stream", to="Denmark", topic="new", content="z")
    )
    assert "automatic_new_visibility_policy" not in body
    # With the policy "never", nothing happens.
    assert_success(
        await env.client("othello").patch("/settings", {"automatically_follow_topics_policy": 4})
    )
    body = assert_success(
        await _post(env, "othello", type="stream", to="Denmark", topic="fresh", content="z")
    )
    assert "automatic_new_visibility_policy" not in body


async def test_automatic_unmute_in_muted_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    assert_success(await client.patch("/settings", {"automatically_follow_topics_policy": 4}))
    assert_success(
        await client.post(
            "/users/me/subscriptions/properties",
            {
                "subscription_data": [
                    {"stream_id": denmark.id, "property": "is_muted", "value": True}
                ]
            },
        )
    )
    body = assert_success(
        await _post(env, "hamlet", type="stream", to="Denmark", topic="t", content="x")
    )
    assert body["automatic_new_visibility_policy"] == 2


async def _count_messages(env: TestEnv) -> int:
    async with env.services.db.read() as conn:
        return int(
            (await conn.execute(sa.select(sa.func.count()).select_from(message))).scalar_one()
        )


async def test_wildcard_mention_permission(env: TestEnv) -> None:
    # Default (administrators): fine for 15 or fewer people, refused above that.
    for name in ("hamlet", "iago", "polonius"):
        await env.subscribe(name, "small")
    await send_stream_message(env, "hamlet", "small", "@**all** hi")
    for i in range(11):
        user = await env.create_user(f"extra{i}@example.com", f"Extra {i}")
        env.users[f"extra{i}"] = user
    for name in env.users:
        await env.subscribe(name, "big")
    before = await _count_messages(env)
    response = await env.client("hamlet").post(
        "/messages", {"type": "stream", "to": "big", "topic": "t", "content": "@**everyone** hi"}
    )
    assert_error(
        response,
        "You do not have permission to use stream wildcard mentions in this stream.",
        code="STREAM_WILDCARD_MENTION_NOT_ALLOWED",
    )
    assert await _count_messages(env) == before
    await send_stream_message(env, "iago", "big", "@**stream** hi", topic="t")

    # Topic wildcards count the topic's participants (feature level 229).
    for name in env.users:
        await send_stream_message(env, name, "big", "here", topic="crowd")
    response = await env.client("hamlet").post(
        "/messages", {"type": "stream", "to": "big", "topic": "crowd", "content": "@**topic**"}
    )
    assert_error(
        response,
        "You do not have permission to use topic wildcard mentions in this topic.",
        code="TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
    )
    await send_stream_message(env, "hamlet", "big", "@**topic**", topic="t")

    # "Everyone" lifts the restriction.
    await set_group_setting(env, "can_mention_many_users_group", "role:everyone")
    await send_stream_message(env, "hamlet", "big", "@**all** again", topic="t")


async def test_topic_wildcard_reaches_the_topics_participants_and_its_sender(
    env: TestEnv,
) -> None:
    """``@**topic**`` flags the topic's earlier senders and the sender of the message
    itself, even in its first message to the topic (the flags are worked out before the
    message is written); a subscriber who never wrote there is not flagged."""
    for name in ("hamlet", "othello", "iago"):
        await env.subscribe(name, "Denmark")
    await send_stream_message(env, "othello", "Denmark", "earlier", topic="plans")
    message_id = await send_stream_message(env, "hamlet", "Denmark", "@**topic**", topic="plans")
    flags = await message_flags(env, message_id)
    users = env.users
    assert flags[users["othello"].id] & TOPIC_WILDCARD_MENTIONED
    assert flags[users["hamlet"].id] & TOPIC_WILDCARD_MENTIONED
    assert not flags[users["iago"].id] & TOPIC_WILDCARD_MENTIONED


async def test_ids_beyond_32_bits_are_errors(env: TestEnv) -> None:
    """A stream or user id no 32-bit id column holds (PostgreSQL's) is a 400, as any id
    that names nothing, and sends nothing: such ids reach statements read through the
    driver directly (``db/fast.py``), past SQLAlchemy's error wrapping."""
    before = await _count(env)
    huge = 2**31
    stream = await _post(env, "hamlet", type="stream", to=str(huge), topic="t", content="x")
    assert stream.status_code == 400 and stream.json()["result"] == "error"
    direct = await _post(env, "hamlet", type="direct", to=f"[{huge}]", content="x")
    assert direct.status_code == 400 and direct.json()["result"] == "error"
    assert await _count(env) == before
