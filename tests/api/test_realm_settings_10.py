"""Behaviour of organization settings Zulip added after feature level 237:
``message_edit_history_visibility_policy`` (358) and ``require_unique_names`` (246)."""

from __future__ import annotations

import pytest

from hubbub.bootstrap import create_user_in_realm
from hubbub.errors import JsonableError
from hubbub.models import Role
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import edit_message, fetch_message, message_history, send_stream_message

UNIQUE = "Unique names required in this organization."


async def _edited_message(env: TestEnv) -> tuple[int, int, int]:
    """A message edited four ways: content only, topic only, content with topic, and a
    move to another stream. Returns its id and the two streams' ids."""
    denmark = await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t0")
    assert_success(await edit_message(env, "hamlet", mid, content="two"))
    assert_success(await edit_message(env, "hamlet", mid, topic="t1"))
    assert_success(await edit_message(env, "hamlet", mid, content="three", topic="t2"))
    assert_success(await edit_message(env, "iago", mid, stream_id=verona.id))
    return mid, denmark.id, verona.id


async def test_moves_policy_shows_only_moves_in_history(env: TestEnv) -> None:
    mid, denmark, verona = await _edited_message(env)
    assert len(await message_history(env, "othello", mid)) == 5
    await env.set_realm(message_edit_history_visibility_policy="moves")
    history = await message_history(env, "othello", mid)
    # The content-only edit is gone; the move that also edited the text keeps the move.
    original, topic_edit, both, move = history
    assert set(original) == {"content", "rendered_content", "timestamp", "topic", "user_id"}
    assert (topic_edit["prev_topic"], topic_edit["topic"]) == ("t0", "t1")
    assert (both["prev_topic"], both["topic"]) == ("t1", "t2")
    for snapshot in history:
        assert not {"prev_content", "prev_rendered_content", "content_html_diff"} & set(snapshot)
    assert (move["prev_stream"], move["stream"]) == (denmark, verona)


async def test_moves_policy_filters_message_edit_history(env: TestEnv) -> None:
    mid, denmark, verona = await _edited_message(env)
    full = (await fetch_message(env, "hamlet", mid))["edit_history"]
    assert len(full) == 4 and sum("prev_content" in e for e in full) == 2
    await env.set_realm(message_edit_history_visibility_policy="moves")
    entries = (await fetch_message(env, "hamlet", mid))["edit_history"]
    # Newest first, as stored: the stream move, the topic move with its text edit
    # stripped, the topic move.
    assert [e.get("prev_topic") for e in entries] == [None, "t1", "t0"]
    assert entries[0]["prev_stream"] == denmark and entries[0]["stream"] == verona
    for entry in entries:
        assert not {"prev_content", "prev_rendered_content", "prev_rendered_content_version"} & (
            set(entry)
        )
    assert [e["timestamp"] for e in entries] == [
        full[0]["timestamp"],
        *[e["timestamp"] for e in full if "prev_topic" in e],
    ]


async def test_none_policy_disables_history(env: TestEnv) -> None:
    mid, _, _ = await _edited_message(env)
    await env.set_realm(message_edit_history_visibility_policy="none")
    assert_error(
        await env.client("hamlet").get(f"/messages/{mid}/history"),
        "Message edit history is disabled in this organization",
    )
    message = await fetch_message(env, "hamlet", mid)
    assert "edit_history" not in message and message["last_edit_timestamp"] > 0
    await env.set_realm(message_edit_history_visibility_policy="all")
    assert len(await message_history(env, "hamlet", mid)) == 5


async def test_unique_names_on_settings_change(env: TestEnv) -> None:
    # Off by default: two users may share a name.
    assert_success(await env.client("hamlet").patch("/settings", {"full_name": "Othello"}))
    assert_success(await env.client("hamlet").patch("/settings", {"full_name": "Hamlet"}))
    await env.set_realm(require_unique_names=True)
    # Case, full-width and mathematical letters do not make a name different.
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in "othello")
    double_struck = "".join(chr(ord(c) - ord("a") + 0x1D552) for c in "othello")
    for name in ("Othello", "OTHELLO", full_width, double_struck):
        assert_error(await env.client("hamlet").patch("/settings", {"full_name": name}), UNIQUE)
    assert (await env.reload(env.users["hamlet"])).full_name == "Hamlet"
    # A change of one's own name's case is allowed.
    assert_success(await env.client("hamlet").patch("/settings", {"full_name": "HAMLET"}))
    assert (await env.reload(env.users["hamlet"])).full_name == "HAMLET"


async def test_unique_names_counts_deactivated_users(env: TestEnv) -> None:
    await env.set_realm(require_unique_names=True)
    othello = env.users["othello"]
    assert_success(await env.client("iago").delete(f"/users/{othello.id}"))
    hamlet = env.users["hamlet"]
    response = await env.client("iago").patch(f"/users/{hamlet.id}", {"full_name": "othello"})
    assert_error(response, UNIQUE)
    assert_success(await env.client("iago").patch(f"/users/{hamlet.id}", {"full_name": "Yorick"}))
    assert (await env.reload(hamlet)).full_name == "Yorick"


async def test_unique_names_on_user_creation(env: TestEnv) -> None:
    params = {"email": "new@example.com", "password": "sesame123", "full_name": "Iago"}
    # Allowed while the setting is off.
    assert_success(await env.client("iago").post("/users", params))
    await env.set_realm(require_unique_names=True)
    params = {"email": "new2@example.com", "password": "sesame123", "full_name": " iago "}
    assert_error(await env.client("iago").post("/users", params), UNIQUE)
    params["full_name"] = "Horatio"
    assert_success(await env.client("iago").post("/users", params))
    # The command line's create-user checks it too.
    with pytest.raises(JsonableError, match=UNIQUE):
        await create_user_in_realm(
            env.services,
            subdomain="",
            email="bot@example.com",
            full_name="HORATIO",
            role=Role.MEMBER,
            password=None,
            bot=True,
        )
