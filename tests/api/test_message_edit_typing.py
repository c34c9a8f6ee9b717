"""``POST /messages/{message_id}/typing`` (feature level 351, this path since level 361)
and its ``typing_edit_message`` events."""

from __future__ import annotations

import copy
from typing import Any

from hubbub.actions.typing import MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS
from hubbub.events.queues import QueueSpec, shape_event
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_error, assert_success, without_id
from tests.messages_helpers import backdate_messages, send_direct_message, send_stream_message


def _edit_typing(env: TestEnv, user: str, message_id: int, op: str = "start") -> Any:
    async def action() -> None:
        assert_success(await env.client(user).post(f"/messages/{message_id}/typing", {"op": op}))

    return action


async def test_stream_message_edit_typing(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "lunch")
    hamlet = env.users["hamlet"]
    for op in ("start", "stop"):
        events = await verify_action(
            env, env.users["othello"], _edit_typing(env, "hamlet", mid, op), num_events=1
        )
        assert without_id(events[0]) == {
            "type": "typing_edit_message",
            "op": op,
            "sender_id": hamlet.id,
            "message_id": mid,
            "recipient": {"type": "channel", "channel_id": denmark.id, "topic": "lunch"},
        }
    # Subscribers hear of it (the editor too); others do not. Unlike stream typing, no
    # client capability is needed.
    await verify_action(env, hamlet, _edit_typing(env, "hamlet", mid), num_events=1)
    await verify_action(env, env.users["iago"], _edit_typing(env, "hamlet", mid), num_events=0)


async def test_subscribers_who_opted_out_are_not_told(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark")
    client = env.client("othello")
    assert_success(await client.patch("/settings", {"receives_typing_notifications": False}))
    await verify_action(env, env.users["othello"], _edit_typing(env, "hamlet", mid), num_events=0)
    await verify_action(env, env.users["hamlet"], _edit_typing(env, "hamlet", mid), num_events=1)


async def test_large_streams_get_no_edit_typing(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark")
    for i in range(MAX_STREAM_SIZE_FOR_TYPING_NOTIFICATIONS - 1):
        user = await env.create_user(f"extra{i}@example.com", f"Extra {i}")
        await env.subscribe(user, "Denmark")
    # Exactly at the limit: still announced.
    await verify_action(env, env.users["hamlet"], _edit_typing(env, "hamlet", mid), num_events=1)
    one_more = await env.create_user("onemore@example.com", "One More")
    await env.subscribe(one_more, "Denmark")
    await verify_action(env, env.users["hamlet"], _edit_typing(env, "hamlet", mid), num_events=0)


async def test_direct_message_edit_typing(env: TestEnv) -> None:
    hamlet, othello, iago = env.users["hamlet"], env.users["othello"], env.users["iago"]
    mid = await send_direct_message(env, "hamlet", ["othello"])
    events = await verify_action(env, othello, _edit_typing(env, "hamlet", mid), num_events=1)
    assert without_id(events[0]) == {
        "type": "typing_edit_message",
        "op": "start",
        "sender_id": hamlet.id,
        "message_id": mid,
        "recipient": {"type": "direct", "user_ids": [hamlet.id, othello.id]},
    }
    await verify_action(env, iago, _edit_typing(env, "hamlet", mid), num_events=0)
    # A group conversation: every participant, in id order.
    group = await send_direct_message(env, "hamlet", ["othello", "iago"])
    events = await verify_action(env, iago, _edit_typing(env, "hamlet", group), num_events=1)
    everyone = sorted([hamlet.id, othello.id, iago.id])
    assert events[0]["recipient"] == {"type": "direct", "user_ids": everyone}
    # A message to oneself goes to oneself, once.
    own = await send_direct_message(env, "hamlet", ["hamlet"])
    events = await verify_action(env, hamlet, _edit_typing(env, "hamlet", own), num_events=1)
    assert events[0]["recipient"] == {"type": "direct", "user_ids": [hamlet.id]}


async def test_direct_recipients_name_only_those_told(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    mid = await send_direct_message(env, "hamlet", ["othello", "iago"])
    assert_success(
        await env.client("othello").patch("/settings", {"receives_typing_notifications": False})
    )
    await verify_action(env, othello, _edit_typing(env, "hamlet", mid), num_events=0)
    events = await verify_action(env, hamlet, _edit_typing(env, "hamlet", mid), num_events=1)
    assert events[0]["recipient"]["user_ids"] == sorted([hamlet.id, env.users["iago"].id])
    assert othello.id not in events[0]["recipient"]["user_ids"]


async def test_empty_topic_is_shown_by_name_to_clients_without_the_capability(
    env: TestEnv,
) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello", "")
    othello = env.users["othello"]
    capable = await register(env, othello, client_capabilities={"empty_topic_name": True})
    plain = await register(env, othello)
    await _edit_typing(env, "hamlet", mid)()
    [seen] = [without_id(e) for e in await env.events("othello", capable)]
    assert seen["recipient"] == {"type": "channel", "channel_id": denmark.id, "topic": ""}
    [shown] = [without_id(e) for e in await env.events("othello", plain)]
    assert shown["recipient"] == {
        "type": "channel",
        "channel_id": denmark.id,
        "topic": "general chat",
    }


def test_shaping_leaves_other_recipients_and_the_original_alone() -> None:
    spec = QueueSpec(queue_id="q", user_id=1, realm_id=1, event_types=None)
    channel: dict[str, Any] = {
        "type": "typing_edit_message",
        "op": "start",
        "sender_id": 1,
        "message_id": 7,
        "recipient": {"type": "channel", "channel_id": 3, "topic": ""},
    }
    original = copy.deepcopy(channel)
    shaped = shape_event(channel, spec)
    assert shaped is not None and shaped["recipient"]["topic"] == "general chat"
    # The published event is shared by every queue: it is never changed in place.
    assert channel == original
    named = {**channel, "recipient": {"type": "channel", "channel_id": 3, "topic": "lunch"}}
    assert shape_event(named, spec) == named
    direct = {**channel, "recipient": {"type": "direct", "user_ids": [1, 2]}}
    assert shape_event(direct, spec) == direct


async def test_errors(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    await env.subscribe("iago", "Secret", invite_only=True)
    mid = await send_stream_message(env, "hamlet", "Denmark")
    hidden = await send_stream_message(env, "iago", "Secret")
    hamlet = env.client("hamlet")
    cases: list[tuple[str, str, dict[str, Any], str, str]] = [
        ("hamlet", str(mid), {}, "Missing 'op' argument", "REQUEST_VARIABLE_MISSING"),
        ("hamlet", str(mid), {"op": "typing"}, "Invalid op", "BAD_REQUEST"),
        ("hamlet", "99999", {"op": "start"}, "Invalid message(s)", "BAD_REQUEST"),
        # A message of a private stream the user cannot read does not leak.
        ("hamlet", str(hidden), {"op": "start"}, "Invalid message(s)", "BAD_REQUEST"),
        (
            "othello",
            str(mid),
            {"op": "start"},
            "You don't have permission to edit this message",
            "BAD_REQUEST",
        ),
    ]
    for user, target, params, msg, code in cases:
        response = await env.client(user).post(f"/messages/{target}/typing", params)
        assert_error(response, msg, code=code)
    assert_success(await hamlet.patch("/settings", {"send_stream_typing_notifications": False}))
    assert_error(
        await hamlet.post(f"/messages/{mid}/typing", {"op": "start"}),
        "User has disabled typing notifications for channel messages",
    )
    direct = await send_direct_message(env, "hamlet", ["othello"])
    # The stream setting does not matter for a direct message, the direct one does.
    assert_success(await hamlet.post(f"/messages/{direct}/typing", {"op": "start"}))
    assert_success(await hamlet.patch("/settings", {"send_private_typing_notifications": False}))
    assert_error(
        await hamlet.post(f"/messages/{direct}/typing", {"op": "start"}),
        "User has disabled typing notifications for direct messages",
    )


async def test_only_while_the_message_may_be_edited(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark")
    hamlet = env.client("hamlet")
    # 600 s by default, and unlike editing itself without any grace period.
    await backdate_messages(env, [mid], 599)
    assert_success(await hamlet.post(f"/messages/{mid}/typing", {"op": "start"}))
    await backdate_messages(env, [mid], 5)
    assert_error(
        await hamlet.post(f"/messages/{mid}/typing", {"op": "start"}),
        "The time limit for editing this message has passed",
    )
    owner = env.client("desdemona")
    assert_success(await owner.patch("/realm", {"message_content_edit_limit_seconds": "unlimited"}))
    assert_success(await hamlet.post(f"/messages/{mid}/typing", {"op": "stop"}))
    assert_success(await owner.patch("/realm", {"allow_message_editing": False}))
    assert_error(
        await hamlet.post(f"/messages/{mid}/typing", {"op": "start"}),
        "Your organization has turned off message editing",
    )
