"""``PATCH /messages/{message_id}``: content and topic edits, their checks and errors."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.db.tables import message, submessage
from hubbub.queries.messages import (
    GROUP_MENTIONED,
    HAS_ALERT_WORD,
    MENTIONED,
    READ,
    STREAM_WILDCARD_MENTIONED,
    TOPIC_WILDCARD_MENTIONED,
)
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import (
    backdate_messages,
    edit_message,
    message_flags,
    send_direct_message,
    send_stream_message,
)


async def _row(env: TestEnv, message_id: int) -> Any:
    async with env.services.db.read() as conn:
        return (await conn.execute(sa.select(message).where(message.c.id == message_id))).one()


async def test_content_edit_rewrites_message_and_records_history(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "**old** text", "lunch")
    before = await _row(env, mid)
    body = assert_success(await edit_message(env, "hamlet", mid, content="*new* text\n\n  "))
    # The plain success, plus the uploads the edit detached (feature level 285; validated
    # against the spec by the client).
    assert body == {"result": "success", "msg": "", "detached_uploads": []}
    row = await _row(env, mid)
    assert (row.content, row.topic) == ("*new* text", "lunch")
    assert row.rendered_content == "<p><em>new</em> text</p>"
    assert row.last_edit_time is not None and row.last_edit_time >= before.date_sent
    [entry] = orjson.loads(row.edit_history)
    assert entry == {
        "user_id": env.users["hamlet"].id,
        "timestamp": int(row.last_edit_time),
        "prev_content": "**old** text",
        "prev_rendered_content": before.rendered_content,
    }
    msg = assert_success(await env.client("hamlet").get(f"/messages/{mid}"))["message"]
    assert msg["last_edit_timestamp"] == int(row.last_edit_time)
    assert msg["edit_history"] == [entry]
    # A second edit goes first (newest first).
    assert_success(await edit_message(env, "hamlet", mid, content="third"))
    history = orjson.loads((await _row(env, mid)).edit_history)
    assert [h["prev_content"] for h in history] == ["*new* text", "**old** text"]


async def test_edit_history_hidden_when_realm_disallows_it(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    assert_success(await edit_message(env, "hamlet", mid, content="two"))
    await env.set_realm(message_edit_history_visibility_policy="none")
    msg = assert_success(await env.client("hamlet").get(f"/messages/{mid}"))["message"]
    assert "edit_history" not in msg
    assert msg["last_edit_timestamp"] > 0


async def test_content_normalization(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello")
    # An edit to nothing leaves "(deleted)", as in Zulip.
    assert_success(await edit_message(env, "hamlet", mid, content=" \n "))
    assert (await _row(env, mid)).content == "(deleted)"
    assert_success(await edit_message(env, "hamlet", mid, content="x" * 10050))
    row = await _row(env, mid)
    assert len(row.content) == 10000 and row.content.endswith("\n[message truncated]")
    assert_success(await edit_message(env, "hamlet", mid, content="/me waves"))
    assert (await _row(env, mid)).is_me_message


async def test_nothing_to_change_and_parameter_errors(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "lunch")
    assert_error(await edit_message(env, "hamlet", mid), "Nothing to change")
    # The same topic (after stripping) is no change either.
    assert_error(await edit_message(env, "hamlet", mid, topic=" lunch "), "Nothing to change")
    assert_error(
        await edit_message(env, "hamlet", mid, topic="a", subject="b"),
        "Can't decide between 'topic' and 'subject' arguments",
        code="REQUEST_CONFUSING_VAR",
    )
    assert_error(
        await edit_message(env, "hamlet", mid, topic="a", propagate_mode="change_some"),
        "Invalid propagate_mode",
    )
    assert_error(
        await edit_message(env, "hamlet", mid, content="x", propagate_mode="change_all"),
        "Invalid propagate_mode without topic edit",
    )
    assert_error(
        await edit_message(env, "hamlet", mid, topic="lunch\x07"),
        "Invalid character in topic, at position 6!",
    )
    assert_error(
        await edit_message(env, "hamlet", mid, stream_id="x"), "stream_id is not valid JSON"
    )
    assert_error(
        await edit_message(env, "hamlet", mid, send_notification_to_old_thread="maybe"),
        "send_notification_to_old_thread is not valid JSON",
    )
    assert (await _row(env, mid)).last_edit_time is None


async def test_invalid_messages(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    assert_error(await edit_message(env, "hamlet", 999999, content="x"), "Invalid message(s)")
    dm = await send_direct_message(env, "othello", ["iago"], "secret")
    assert_error(await edit_message(env, "hamlet", dm, content="x"), "Invalid message(s)")
    await env.subscribe("iago", "Secret", invite_only=True)
    hidden = await send_stream_message(env, "iago", "Secret", "psst")
    assert_error(await edit_message(env, "hamlet", hidden, topic="x"), "Invalid message(s)")


async def test_only_the_sender_edits_content(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "lunch")
    for user in ("othello", "iago", "desdemona"):
        assert_error(
            await edit_message(env, user, mid, content="x"),
            "You don't have permission to edit this message",
        )
    # Others may change the topic (can_move_messages_between_topics_group defaults to
    # everyone).
    assert_success(await edit_message(env, "othello", mid, topic="dinner"))
    row = await _row(env, mid)
    assert (row.content, row.topic) == ("hello", "dinner")
    assert orjson.loads(row.edit_history)[0]["user_id"] == env.users["othello"].id


async def test_message_editing_turned_off(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "lunch")
    await env.set_realm(allow_message_editing=False)
    assert_error(
        await edit_message(env, "hamlet", mid, content="x"),
        "Your organization has turned off message editing",
    )
    # Since feature level 159 topics stay editable (can_move_messages_between_topics_group).
    assert_success(await edit_message(env, "hamlet", mid, topic="dinner"))


async def test_content_time_limit(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello")
    # 600 s by default, with Zulip's 20 s of grace.
    await backdate_messages(env, [mid], 610)
    assert_success(await edit_message(env, "hamlet", mid, content="within grace"))
    await backdate_messages(env, [mid], 20)
    assert_error(
        await edit_message(env, "hamlet", mid, content="late"),
        "The time limit for editing this message has passed",
    )
    # The topic has its own, longer limit.
    assert_success(await edit_message(env, "hamlet", mid, topic="still fine"))
    await env.set_realm(message_content_edit_limit_seconds="unlimited")
    await backdate_messages(env, [mid], 10 * 86400)
    assert_success(await edit_message(env, "hamlet", mid, content="no limit"))
    assert (await _row(env, mid)).content == "no limit"


async def test_topic_edit_permission(env: TestEnv) -> None:
    for name in ("hamlet", "iago", "polonius"):
        await env.subscribe(name, "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "t0")
    # Everyone (the default) includes guests.
    assert_success(await edit_message(env, "polonius", mid, topic="t1"))
    await set_group_setting(env, "can_move_messages_between_topics_group", "role:members")
    assert_error(
        await edit_message(env, "polonius", mid, topic="t2"),
        "You don't have permission to edit this message",
    )
    await set_group_setting(env, "can_move_messages_between_topics_group", "role:administrators")
    # The sender is no exception.
    assert_error(
        await edit_message(env, "hamlet", mid, topic="t2"),
        "You don't have permission to edit this message",
    )
    assert_success(await edit_message(env, "iago", mid, topic="t2"))
    assert (await _row(env, mid)).topic == "t2"


async def test_resolving_needs_its_own_permission(env: TestEnv) -> None:
    """Resolving or unresolving a topic needs can_resolve_topics_group (feature level
    367); other renames can_move_messages_between_topics_group."""
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "lunch")
    await set_group_setting(env, "can_resolve_topics_group", "role:moderators")
    assert_error(
        await edit_message(env, "hamlet", mid, topic="✔ lunch"),
        "You don't have permission to resolve topics.",
    )
    assert_success(await edit_message(env, "hamlet", mid, topic="✔ lunchtime"))
    await set_group_setting(env, "can_move_messages_between_topics_group", "role:nobody")
    await set_group_setting(env, "can_resolve_topics_group", "role:members")
    assert_success(await edit_message(env, "hamlet", mid, topic="lunchtime"))
    assert_success(await edit_message(env, "hamlet", mid, topic="✔ lunchtime"))
    assert_error(
        await edit_message(env, "hamlet", mid, topic="✔ dinner"),
        "You don't have permission to edit this message",
    )
    assert (await _row(env, mid)).topic == "✔ lunchtime"


async def test_topic_time_limit(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "t0")
    await env.set_realm(move_messages_within_stream_limit_seconds=60)
    await backdate_messages(env, [mid], 100)
    assert_error(
        await edit_message(env, "hamlet", mid, topic="t1"),
        "The time limit for editing this message's topic has passed.",
    )
    # Moderators and administrators have no limit.
    assert_success(await edit_message(env, "shiva", mid, topic="t1"))
    assert_success(await edit_message(env, "iago", mid, topic="t2"))
    await env.set_realm(move_messages_within_stream_limit_seconds="unlimited")
    assert_success(await edit_message(env, "hamlet", mid, topic="t3"))


async def test_topic_normalization_and_resolving(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "lunch")
    assert_success(await edit_message(env, "hamlet", mid, topic="  brunch  "))
    assert (await _row(env, mid)).topic == "brunch"
    assert_success(await edit_message(env, "hamlet", mid, topic="b" * 70))
    assert (await _row(env, mid)).topic == "b" * 57 + "..."
    # Resolving is a topic edit like any other; a change of case is a change.
    assert_success(await edit_message(env, "hamlet", mid, topic="✔ Brunch"))
    assert_success(await edit_message(env, "hamlet", mid, topic="✔ brunch"))
    row = await _row(env, mid)
    assert row.topic == "✔ brunch"
    assert [h["topic"] for h in orjson.loads(row.edit_history)][:2] == ["✔ brunch", "✔ Brunch"]


async def test_content_and_topic_together(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    assert_success(await edit_message(env, "hamlet", mid, content="two", subject="u"))
    row = await _row(env, mid)
    assert (row.content, row.topic) == ("two", "u")
    [entry] = orjson.loads(row.edit_history)
    assert set(entry) == {
        "user_id",
        "timestamp",
        "prev_content",
        "prev_rendered_content",
        "prev_topic",
        "topic",
    }
    assert (entry["prev_topic"], entry["topic"]) == ("t", "u")


async def test_direct_messages(env: TestEnv) -> None:
    mid = await send_direct_message(env, "hamlet", ["othello"], "hi")
    assert_error(
        await edit_message(env, "hamlet", mid, topic="x"), "Direct messages cannot have topics."
    )
    stream = await env.subscribe("hamlet", "Denmark")
    assert_error(
        await edit_message(env, "hamlet", mid, stream_id=stream.id),
        "Direct messages cannot be moved to streams.",
    )
    assert_success(await edit_message(env, "hamlet", mid, content="hi @**Othello**"))
    assert (await message_flags(env, mid))[env.users["othello"].id] & MENTIONED
    assert_error(
        await edit_message(env, "othello", mid, content="x"),
        "You don't have permission to edit this message",
    )


async def test_widgets_cannot_be_edited(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "/poll Lunch?")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(submessage).values(
                message_id=mid, sender_id=env.users["hamlet"].id, msg_type="widget", content="{}"
            )
        )
    assert_error(await edit_message(env, "hamlet", mid, content="x"), "Widgets cannot be edited.")
    assert_success(await edit_message(env, "hamlet", mid, topic="polls"))


async def test_mention_and_alert_flags_follow_content(env: TestEnv) -> None:
    for name in ("hamlet", "othello", "iago", "shiva"):
        await env.subscribe(name, "Denmark")
    users = env.users
    assert_success(
        await env.client("iago").post("/users/me/alert_words", {"alert_words": ["castle"]})
    )
    assert_success(
        await env.client("iago").post(
            "/user_groups/create",
            {"name": "mods", "description": "", "members": [users["shiva"].id]},
        )
    )
    mid = await send_stream_message(env, "hamlet", "Denmark", "hi @**Othello**", "t")
    assert_success(
        await env.client("othello").post(
            "/messages/flags", {"messages": [mid], "op": "add", "flag": "read"}
        )
    )
    assert (await message_flags(env, mid))[users["othello"].id] == MENTIONED | READ
    assert_success(await edit_message(env, "hamlet", mid, content="the castle, @*mods*"))
    flags = await message_flags(env, mid)
    # Other flags (read) stay; the mention goes; alert words and groups count now.
    assert flags[users["othello"].id] == READ
    assert flags[users["iago"].id] == HAS_ALERT_WORD
    assert flags[users["shiva"].id] == GROUP_MENTIONED | MENTIONED
    assert_success(await edit_message(env, "hamlet", mid, content="@**all** and @**topic**"))
    flags = await message_flags(env, mid)
    # Only the topic's participant (the sender) is in the topic wildcard.
    assert flags[users["hamlet"].id] == STREAM_WILDCARD_MENTIONED | TOPIC_WILDCARD_MENTIONED
    assert flags[users["iago"].id] == STREAM_WILDCARD_MENTIONED
    assert_success(await edit_message(env, "hamlet", mid, content="quiet"))
    assert set((await message_flags(env, mid)).values()) <= {0, READ}


async def test_wildcard_mention_permission_applies_to_edits(env: TestEnv) -> None:
    for i in range(11):
        env.users[f"extra{i}"] = await env.create_user(f"extra{i}@example.com", f"Extra {i}")
    for name in env.users:
        await env.subscribe(name, "big")
    mid = await send_stream_message(env, "hamlet", "big", "hello", "t")
    assert_error(
        await edit_message(env, "hamlet", mid, content="@**everyone** hi"),
        "You do not have permission to use stream wildcard mentions in this stream.",
        code="STREAM_WILDCARD_MENTION_NOT_ALLOWED",
    )
    assert (await _row(env, mid)).content == "hello"
    await set_group_setting(env, "can_mention_many_users_group", "role:everyone")
    assert_success(await edit_message(env, "hamlet", mid, content="@**everyone** hi"))
