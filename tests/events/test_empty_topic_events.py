"""Events naming the empty topic (feature level 334): a client without the
``empty_topic_name`` capability is shown the display name in every field Zulip lists, and
its state after the events still equals a fresh ``/register``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hubbub.events.queues import QueueSpec, shape_event
from hubbub.queries.narrow import check_narrow
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_stream_message

CAPABLE = {"empty_topic_name": True}


def _spec(capabilities: dict[str, Any] | None = None, **fields: Any) -> QueueSpec:
    # Stream typing notifications go only to clients that can show them.
    return QueueSpec(
        queue_id="q",
        user_id=1,
        realm_id=1,
        event_types=None,
        client_capabilities={"stream_typing_notifications": True, **(capabilities or {})},
        **fields,
    )


STREAM_MESSAGE = {"id": 7, "type": "stream", "stream_id": 3, "subject": "", "content": "hi"}

# (event, the event as a client without the capability sees it)
RENAMED = [
    (
        {"type": "message", "message": STREAM_MESSAGE, "flags": []},
        {"type": "message", "message": {**STREAM_MESSAGE, "subject": "general chat"}, "flags": []},
    ),
    (
        {"type": "delete_message", "message_type": "stream", "stream_id": 3, "topic": ""},
        {
            "type": "delete_message",
            "message_type": "stream",
            "stream_id": 3,
            "topic": "general chat",
        },
    ),
    (
        {"type": "update_message", "stream_id": 3, "orig_subject": "", "subject": "lunch"},
        {
            "type": "update_message",
            "stream_id": 3,
            "orig_subject": "general chat",
            "subject": "lunch",
        },
    ),
    (
        {"type": "update_message", "stream_id": 3, "orig_subject": "lunch", "subject": ""},
        {
            "type": "update_message",
            "stream_id": 3,
            "orig_subject": "lunch",
            "subject": "general chat",
        },
    ),
    (
        {"type": "user_topic", "stream_id": 3, "topic_name": "", "visibility_policy": 1},
        {
            "type": "user_topic",
            "stream_id": 3,
            "topic_name": "general chat",
            "visibility_policy": 1,
        },
    ),
    (
        {"type": "typing", "op": "start", "message_type": "stream", "stream_id": 3, "topic": ""},
        {
            "type": "typing",
            "op": "start",
            "message_type": "stream",
            "stream_id": 3,
            "topic": "general chat",
        },
    ),
    (
        {
            "type": "update_message_flags",
            "op": "remove",
            "flag": "read",
            "messages": [7, 8],
            "message_details": {
                "7": {"type": "stream", "stream_id": 3, "topic": ""},
                "8": {"type": "private", "user_id": 4},
            },
        },
        {
            "type": "update_message_flags",
            "op": "remove",
            "flag": "read",
            "messages": [7, 8],
            "message_details": {
                "7": {"type": "stream", "stream_id": 3, "topic": "general chat"},
                "8": {"type": "private", "user_id": 4},
            },
        },
    ),
]

UNCHANGED = [
    {"type": "message", "message": {**STREAM_MESSAGE, "subject": "lunch"}, "flags": []},
    {"type": "message", "message": {"id": 8, "type": "private", "subject": ""}, "flags": []},
    {"type": "delete_message", "message_type": "private", "message_ids": [8]},
    # A direct message's edit names no topic.
    {"type": "update_message", "message_id": 8, "content": "x"},
    {"type": "typing", "op": "start", "message_type": "direct", "recipients": []},
    {"type": "update_message_flags", "op": "add", "flag": "read", "messages": [7]},
]


@pytest.mark.parametrize(("event", "shown"), RENAMED)
def test_the_display_name_replaces_the_empty_topic(
    event: dict[str, Any], shown: dict[str, Any]
) -> None:
    original = copy.deepcopy(event)
    assert shape_event(event, _spec()) == shown
    # The published event is shared by every queue: it is never changed in place.
    assert event == original
    assert shape_event(event, _spec(CAPABLE)) == original


@pytest.mark.parametrize("event", UNCHANGED)
def test_events_without_an_empty_topic(event: dict[str, Any]) -> None:
    assert shape_event(event, _spec()) == event


def test_a_narrowed_queue_matches_the_stored_topic() -> None:
    event = {"type": "message", "message": {**STREAM_MESSAGE, "sender_id": 2}, "flags": []}
    for narrow in ([["topic", ""]], [["topic", "general chat"]]):
        shaped = shape_event(event, _spec(narrow=check_narrow(narrow)))
        assert shaped is not None and shaped["message"]["subject"] == "general chat"
    assert shape_event(event, _spec(narrow=[["topic", "lunch"]])) is None


@pytest.mark.parametrize("capabilities", [{}, CAPABLE])
async def test_state_and_events_agree(env: TestEnv, capabilities: dict[str, Any]) -> None:
    """For both kinds of client: a message to the empty topic (unread), muting it, and
    moving it away, each applied to the old state, equal a fresh ``/register``."""
    verona = await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    hamlet = env.users["hamlet"]
    params: dict[str, Any] = {
        "event_types": ["message", "update_message_flags", "user_topic", "update_message"],
        "client_capabilities": capabilities,
    }
    shown = "" if capabilities else "general chat"
    sent: list[int] = []

    async def send() -> None:
        sent.append(await send_stream_message(env, "othello", "Verona", "hi", topic=""))

    events = await verify_action(env, hamlet, send, **params)
    assert [e["message"]["subject"] for e in events if e["type"] == "message"] == [shown]
    state = await register(env, hamlet, **params)
    assert [s["topic"] for s in state["unread_msgs"]["streams"]] == [shown]

    async def mute() -> None:
        body = {"stream_id": verona.id, "topic": "", "visibility_policy": 1}
        assert_success(await env.client("hamlet").post("/user_topics", body))

    events = await verify_action(env, hamlet, mute, **params)
    assert [e["topic_name"] for e in events if e["type"] == "user_topic"] == [shown]
    state = await register(env, hamlet, **params)
    assert [t["topic_name"] for t in state["user_topics"]] == [shown]

    async def move() -> None:
        assert_success(
            await env.client("othello").patch(
                f"/messages/{sent[0]}", {"topic": "lunch", "propagate_mode": "change_all"}
            )
        )

    events = await verify_action(env, hamlet, move, **params)
    assert [e["orig_subject"] for e in events if e["type"] == "update_message"] == [shown]
