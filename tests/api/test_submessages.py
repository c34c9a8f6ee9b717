"""``POST /submessage`` (widget data) and the ``submessages`` of message objects."""

from __future__ import annotations

from typing import Any

import orjson

from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message

POLL = {"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": ["pizza"]}}
TODO = {"widget_type": "todo", "extra_data": None}


async def _submit(
    env: TestEnv, user: str, message_id: int, content: Any, msg_type: str = "widget"
) -> Any:
    text = content if isinstance(content, str) else orjson.dumps(content).decode()
    return await env.client(user).post(
        "/submessage", {"message_id": message_id, "msg_type": msg_type, "content": text}
    )


async def _widget_message(env: TestEnv, widget: dict[str, Any]) -> int:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark", "/poll Lunch?")
    assert_success(await _submit(env, "hamlet", message_id, widget))
    return message_id


async def test_submessages_on_message_objects(env: TestEnv) -> None:
    message_id = await _widget_message(env, POLL)
    vote = {"type": "vote", "key": "canned,0", "vote": 1}
    assert_success(await _submit(env, "othello", message_id, vote))
    hamlet, othello = env.users["hamlet"].id, env.users["othello"].id
    msg = assert_success(await env.client("othello").get(f"/messages/{message_id}"))["message"]
    subs = msg["submessages"]
    assert [
        (s["msg_type"], orjson.loads(s["content"]), s["message_id"], s["sender_id"]) for s in subs
    ] == [("widget", POLL, message_id, hamlet), ("widget", vote, message_id, othello)]
    assert subs[0]["id"] < subs[1]["id"]
    assert set(subs[0]) == {"id", "msg_type", "content", "message_id", "sender_id"}
    other_id = await send_stream_message(env, "othello", "Denmark")
    body = assert_success(
        await env.client("hamlet").get(
            "/messages", {"anchor": "oldest", "num_before": 0, "num_after": 10}
        )
    )
    by_id = {m["id"]: m for m in body["messages"]}
    assert by_id[message_id]["submessages"] == subs
    assert by_id[other_id]["submessages"] == []


async def test_the_sender_attaches_the_first_submessage(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    assert_error(
        await _submit(env, "othello", message_id, POLL),
        "You cannot attach a submessage to this message.",
    )
    # Any msg_type from the sender opens the message to the others.
    assert_success(await _submit(env, "hamlet", message_id, {"x": 1}, msg_type="other"))
    assert_success(await _submit(env, "othello", message_id, {"y": 2}, msg_type="other"))


async def test_access_and_parameter_errors(env: TestEnv) -> None:
    direct_id = await send_direct_message(env, "hamlet", ["othello"])
    assert_error(await _submit(env, "iago", direct_id, POLL), "Invalid message(s)")
    assert_error(await _submit(env, "hamlet", 999999, POLL), "Invalid message(s)")
    assert_error(await _submit(env, "hamlet", direct_id, "bogus"), "Invalid json for submessage")
    assert_error(
        await env.client("hamlet").post(
            "/submessage", {"message_id": "x", "msg_type": "widget", "content": "{}"}
        ),
        "message_id is not valid JSON",
    )
    assert_error(
        await env.client("hamlet").post(
            "/submessage", {"message_id": "true", "msg_type": "widget", "content": "{}"}
        ),
        "message_id is not an integer",
    )
    assert_error(
        await env.client("hamlet").post(
            "/submessage", {"message_id": direct_id, "msg_type": "widget"}
        ),
        "Missing 'content' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    # Any JSON is fine when the message is not a poll or to-do widget.
    assert_success(await _submit(env, "hamlet", direct_id, "[1, 2]"))


async def test_public_history_reader_adds_without_a_row(env: TestEnv) -> None:
    message_id = await _widget_message(env, POLL)
    iago = env.users["iago"].id
    vote = {"type": "vote", "key": "canned,0", "vote": -1}
    assert_success(await _submit(env, "iago", message_id, vote))
    # Unlike a reaction, a submessage creates no historical row (as Zulip).
    assert iago not in await message_flags(env, message_id)
    assert_error(await _submit(env, "polonius", message_id, vote), "Invalid message(s)")


async def test_poll_data_validation(env: TestEnv) -> None:
    message_id = await _widget_message(env, POLL)
    cases: list[tuple[str, Any, str]] = [
        ("othello", '""', "poll data is not a dict"),
        ("othello", [], "poll data is not a dict"),
        ("othello", {}, "type key is missing from poll data"),
        ("othello", {"type": 7}, 'poll data["type"] is not a string'),
        ("othello", {"type": "bogus"}, "Unknown type for poll data: bogus"),
        ("othello", {"type": "vote"}, "key key is missing from poll data"),
        ("othello", {"type": "vote", "key": "1,1", "vote": 99}, 'Invalid poll data["vote"]'),
        ("othello", {"type": "vote", "key": 1, "vote": 1}, 'poll data["key"] is not a string'),
        (
            "othello",
            {"type": "vote", "key": "1,1", "vote": "1"},
            'poll data["vote"] is not an integer',
        ),
        (
            "othello",
            {"type": "vote", "key": "1,1", "vote": 1, "b": 0, "a": 0},
            "Unexpected arguments: a, b",
        ),
        (
            "othello",
            {"type": "question", "question": "Dinner?"},
            "You can't edit a question unless you are the author.",
        ),
        ("hamlet", {"type": "question"}, "question key is missing from poll data"),
        ("hamlet", {"type": "question", "question": 7}, 'poll data["question"] is not a string'),
        ("othello", {"type": "new_option"}, "option key is missing from poll data"),
        (
            "othello",
            {"type": "new_option", "idx": 7, "option": 999},
            'poll data["option"] is not a string',
        ),
        (
            "othello",
            {"type": "new_option", "idx": -1, "option": "soup"},
            'poll data["idx"] is too small',
        ),
        (
            "othello",
            {"type": "new_option", "idx": 1001, "option": "soup"},
            'poll data["idx"] is too large',
        ),
        (
            "othello",
            {"type": "new_option", "idx": "x", "option": "soup"},
            'poll data["idx"] is not an integer',
        ),
    ]
    for user, content, msg in cases:
        assert_error(await _submit(env, user, message_id, content), msg)
    # Only types are checked: a vote for an unknown option is the clients' concern.
    for user, content in [
        ("othello", {"type": "vote", "key": "9,9", "vote": 1}),
        ("othello", {"type": "new_option", "idx": 7, "option": "soup"}),
        ("hamlet", {"type": "question", "question": "Dinner?"}),
    ]:
        assert_success(await _submit(env, user, message_id, content))
    msg = assert_success(await env.client("hamlet").get(f"/messages/{message_id}"))["message"]
    assert len(msg["submessages"]) == 4


async def test_todo_data_validation(env: TestEnv) -> None:
    message_id = await _widget_message(env, TODO)
    task = {"type": "new_task", "key": 7, "task": "eat", "desc": "", "completed": False}
    cases: list[tuple[str, Any, str]] = [
        ("othello", {"type": "bogus"}, "Unknown type for todo data: bogus"),
        ("othello", {"type": "new_task"}, "key key is missing from todo data"),
        ("othello", {**task, "task": 7}, 'todo data["task"] is not a string'),
        ("othello", {**task, "key": -1}, 'todo data["key"] is too small'),
        ("othello", {**task, "key": 1001}, 'todo data["key"] is too large'),
        ("othello", {**task, "completed": 0}, 'todo data["completed"] is not a boolean'),
        ("othello", {"type": "strike"}, "key key is missing from todo data"),
        ("othello", {"type": "strike", "key": 999}, 'todo data["key"] is not a string'),
        (
            "othello",
            {"type": "new_task_list_title", "title": "Chores"},
            "You can't edit the task list title unless you are the author.",
        ),
    ]
    for user, content, msg in cases:
        assert_error(await _submit(env, user, message_id, content), msg)
    for user, content in [
        ("othello", task),
        ("othello", {"type": "strike", "key": "7,5"}),
        ("hamlet", {"type": "new_task_list_title", "title": "Chores"}),
    ]:
        assert_success(await _submit(env, user, message_id, content))
