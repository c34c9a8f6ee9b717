"""``GET /messages/{message_id}/history`` and the rendered-content diff it shows."""

from __future__ import annotations

from hubbub.queries.message_history import html_diff
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import (
    edit_message,
    message_history,
    send_direct_message,
    send_stream_message,
)


async def test_unedited_message_has_one_snapshot(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "**hi**", "lunch")
    msg = assert_success(await env.client("hamlet").get(f"/messages/{mid}"))["message"]
    assert await message_history(env, "hamlet", mid) == [
        {
            "topic": "lunch",
            "content": "**hi**",
            "rendered_content": "<p><strong>hi</strong></p>",
            "timestamp": msg["timestamp"],
            "user_id": env.users["hamlet"].id,
        }
    ]


async def test_snapshots_oldest_first_with_what_changed(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    users = env.users
    mid = await send_stream_message(env, "hamlet", "Denmark", "Hello world", "t0")
    assert_success(await edit_message(env, "hamlet", mid, content="Hello there world"))
    assert_success(await edit_message(env, "othello", mid, topic="t1"))
    assert_success(await edit_message(env, "iago", mid, stream_id=verona.id))
    history = await message_history(env, "othello", mid)
    assert len(history) == 4
    original, content_edit, topic_edit, move = history
    assert original == {
        "topic": "t0",
        "content": "Hello world",
        "rendered_content": "<p>Hello world</p>",
        "timestamp": original["timestamp"],
        "user_id": users["hamlet"].id,
    }
    assert content_edit["user_id"] == users["hamlet"].id
    assert (content_edit["content"], content_edit["prev_content"]) == (
        "Hello there world",
        "Hello world",
    )
    assert content_edit["rendered_content"] == "<p>Hello there world</p>"
    assert content_edit["prev_rendered_content"] == "<p>Hello world</p>"
    assert content_edit["content_html_diff"] == (
        '<div><p>Hello <span class="highlight_text_inserted">there </span>world</p></div>'
    )
    assert content_edit["topic"] == "t0" and "prev_topic" not in content_edit
    assert topic_edit["user_id"] == users["othello"].id
    assert (topic_edit["topic"], topic_edit["prev_topic"]) == ("t1", "t0")
    assert topic_edit["content"] == "Hello there world"
    assert not {"prev_content", "content_html_diff", "prev_stream"} & set(topic_edit)
    assert move["user_id"] == users["iago"].id
    assert (move["prev_stream"], move["stream"]) == (denmark.id, verona.id)
    assert move["topic"] == "t1" and "prev_topic" not in move
    assert [s["timestamp"] for s in history] == sorted(s["timestamp"] for s in history)


async def test_history_of_direct_messages_and_access(env: TestEnv) -> None:
    mid = await send_direct_message(env, "hamlet", ["othello"], "one")
    assert_success(await edit_message(env, "hamlet", mid, content="two"))
    history = await message_history(env, "othello", mid)
    assert [(s["content"], s["topic"]) for s in history] == [("one", ""), ("two", "")]
    response = await env.client("iago").get(f"/messages/{mid}/history")
    assert_error(response, "Invalid message(s)")
    assert_error(await env.client("iago").get("/messages/999999/history"), "Invalid message(s)")


async def test_history_disabled(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    assert_success(await edit_message(env, "hamlet", mid, content="two"))
    assert_success(
        await env.client("desdemona").patch(
            "/realm", {"message_edit_history_visibility_policy": "none"}
        )
    )
    for user in ("hamlet", "desdemona"):
        assert_error(
            await env.client(user).get(f"/messages/{mid}/history"),
            "Message edit history is disabled in this organization",
        )


def test_html_diff_marks_insertions_and_deletions() -> None:
    assert html_diff("<p>Hello!</p>", "<p>Howdy!</p>") == (
        '<div><p><span class="highlight_text_deleted">Hello</span>'
        '<span class="highlight_text_inserted">Howdy</span>!</p></div>'
    )
    assert html_diff("<p>a b c</p>", "<p>a c</p>") == (
        '<div><p>a <span class="highlight_text_deleted">b </span>c</p></div>'
    )
    # Deleted markup is dropped and spans never cross tags, so the result stays balanced.
    assert html_diff("<p><strong>bold</strong> x</p>", "<p>x</p>") == (
        '<div><p><span class="highlight_text_deleted">bold</span>x</p></div>'
    )
    assert html_diff("<p>x</p>", "<p>x</p><p>more <em>here</em></p>") == (
        '<div><p>x</p><p><span class="highlight_text_inserted">more </span>'
        '<em><span class="highlight_text_inserted">here</span></em></p></div>'
    )
    assert html_diff("<p>same</p>", "<p>same</p>") == "<div><p>same</p></div>"
