"""Message objects at Zulip 10.2: ``last_edit_timestamp`` and ``last_moved_timestamp``
apart (feature level 365), no ``prev_rendered_content_version`` (284), the recipient id
of an incoming 1:1 direct message (327), and the first message id of a stream after a
deletion (256). Responses are validated against the schemas by the test client."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.db.tables import message, stream
from hubbub.queries.edit_timestamps import edit_timestamps, is_move
from hubbub.topic_names import is_resolve_or_unresolve
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import (
    edit_message,
    fetch_message,
    send_direct_message,
    send_stream_message,
)


async def _fetched(env: TestEnv, user: str, message_id: int) -> dict[str, Any]:
    body = assert_success(
        await env.client(user).get(
            "/messages", {"anchor": message_id, "num_before": 0, "num_after": 0}
        )
    )
    [found] = body["messages"]
    return found  # type: ignore[no-any-return]


async def _set_history(env: TestEnv, message_id: int, entries: list[dict[str, Any]]) -> None:
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(message)
            .where(message.c.id == message_id)
            .values(
                last_edit_time=float(entries[0]["timestamp"]),
                edit_history=orjson.dumps(entries).decode(),
            )
        )


def test_timestamps_from_history() -> None:
    entries: list[dict[str, Any]] = [
        {"timestamp": 40, "prev_topic": "a", "topic": "✔ a"},
        {"timestamp": 30, "prev_content": "x"},
        {"timestamp": 20, "prev_stream": 1, "stream": 2},
        {"timestamp": 10, "prev_content": "y", "prev_topic": "b", "topic": "a"},
    ]
    assert edit_timestamps(entries) == (30, 20)
    assert edit_timestamps(entries[:1]) == (None, None)
    assert edit_timestamps([]) == (None, None)
    assert is_resolve_or_unresolve("a", "✔ a") and is_resolve_or_unresolve("✔ a", "a")
    assert not is_resolve_or_unresolve("a", "✔ b") and not is_resolve_or_unresolve("✔ a", "✔ a")
    # A resolve that also changes the stream is a move.
    assert is_move({"timestamp": 1, "prev_topic": "a", "topic": "✔ a", "prev_stream": 1})


async def test_content_edit_sets_only_last_edit_timestamp(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    assert_success(await edit_message(env, "hamlet", mid, content="two"))
    for found in (await fetch_message(env, "hamlet", mid), await _fetched(env, "hamlet", mid)):
        assert found["last_edit_timestamp"] == found["edit_history"][0]["timestamp"]
        assert "last_moved_timestamp" not in found
        assert "prev_rendered_content_version" not in found["edit_history"][0]


async def test_topic_move_sets_only_last_moved_timestamp(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    second = await send_stream_message(env, "hamlet", "Denmark", "two", "t")
    assert_success(await edit_message(env, "hamlet", first, topic="u", propagate_mode="change_all"))
    for mid in (first, second):
        found = await _fetched(env, "hamlet", mid)
        assert "last_edit_timestamp" not in found
        assert found["last_moved_timestamp"] == found["edit_history"][0]["timestamp"]


async def test_resolving_is_no_move(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    assert_success(await edit_message(env, "hamlet", mid, topic="✔ t", propagate_mode="change_all"))
    found = await fetch_message(env, "hamlet", mid)
    assert found["edit_history"][0]["topic"] == "✔ t"
    assert "last_edit_timestamp" not in found and "last_moved_timestamp" not in found
    assert_success(await edit_message(env, "hamlet", mid, content="two"))
    found = await fetch_message(env, "hamlet", mid)
    assert "last_edit_timestamp" in found and "last_moved_timestamp" not in found


async def test_stream_move_and_older_history(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    await _set_history(
        env,
        mid,
        [
            {
                "user_id": env.users["hamlet"].id,
                "timestamp": 300,
                "prev_topic": "s",
                "topic": "✔ s",
            },
            {
                "user_id": env.users["hamlet"].id,
                "timestamp": 200,
                "prev_stream": verona.id,
                "stream": 1,
            },
            {
                "user_id": env.users["hamlet"].id,
                "timestamp": 100,
                "prev_content": "zero",
                "prev_rendered_content": "<p>zero</p>",
                # Written before feature level 284; never shown since.
                "prev_rendered_content_version": 1,
            },
        ],
    )
    found = await fetch_message(env, "hamlet", mid)
    assert (found["last_edit_timestamp"], found["last_moved_timestamp"]) == (100, 200)
    assert all("prev_rendered_content_version" not in e for e in found["edit_history"])
    assert len(found["edit_history"]) == 3


async def test_moved_message_event_fields(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t")

    async def action() -> None:
        assert_success(await edit_message(env, "hamlet", mid, content="two"))

    [event] = await verify_action(env, env.users["othello"], action)
    assert event["type"] == "update_message"
    assert "prev_rendered_content_version" not in event


async def test_incoming_direct_message_recipient_id(env: TestEnv) -> None:
    # othello writes first, so hamlet's personal recipient exists.
    to_hamlet = await send_direct_message(env, "othello", ["hamlet"], "hi")
    to_othello = await send_direct_message(env, "hamlet", ["othello"], "hello")
    outgoing = (await fetch_message(env, "othello", to_hamlet))["recipient_id"]
    # The incoming message shows the recipient id of othello's own messages to hamlet.
    assert (await fetch_message(env, "othello", to_othello))["recipient_id"] == outgoing
    assert (await _fetched(env, "othello", to_othello))["recipient_id"] == outgoing
    # hamlet's view: his outgoing message and othello's incoming one match too.
    mine = (await fetch_message(env, "hamlet", to_othello))["recipient_id"]
    assert (await fetch_message(env, "hamlet", to_hamlet))["recipient_id"] == mine
    assert mine != outgoing
    # A message to oneself keeps its own recipient.
    to_self = await send_direct_message(env, "hamlet", ["hamlet"], "note")
    assert (await fetch_message(env, "hamlet", to_self))["recipient_id"] == outgoing


async def test_deleting_first_message_updates_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    # Unread, so othello's state knows a message older than the deleted ones (the
    # fallback of ``max_message_id``, see ``message_delete_state``).
    await send_direct_message(env, "hamlet", ["othello"], "kept")
    first = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    second = await send_stream_message(env, "hamlet", "Denmark", "two", "u")

    async def delete(message_id: int) -> None:
        assert_success(await env.client("iago").delete(f"/messages/{message_id}"))

    async def delete_first() -> None:
        await delete(first)

    events = await verify_action(env, env.users["othello"], delete_first)
    [update] = [e for e in events if e["type"] == "stream"]
    assert (update["op"], update["property"], update["value"]) == (
        "update",
        "first_message_id",
        second,
    )
    assert update["stream_id"] == denmark.id

    async def delete_second() -> None:
        await delete(second)

    events = await verify_action(env, env.users["othello"], delete_second)
    [update] = [e for e in events if e["type"] == "stream"]
    assert update["value"] is None
    async with env.services.db.read() as conn:
        value = (
            await conn.execute(
                sa.select(stream.c.first_message_id).where(stream.c.id == denmark.id)
            )
        ).scalar()
    assert value is None
    # Deleting a later message changes nothing of the stream.
    third = await send_stream_message(env, "hamlet", "Denmark", "three", "t")
    fourth = await send_stream_message(env, "hamlet", "Denmark", "four", "t")
    del third

    async def delete_fourth() -> None:
        await delete(fourth)

    events = await verify_action(env, env.users["othello"], delete_fourth)
    assert [e["type"] for e in events] == ["delete_message"]


async def test_deleter_always_hears_of_deletion(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    # Kept, so that no deletion below changes the stream's first message.
    await send_stream_message(env, "hamlet", "Denmark", "zero", "t")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one", "t")
    other = await send_stream_message(env, "hamlet", "Denmark", "two", "t")
    # iago (an administrator) is not subscribed to Denmark.
    state = await register(env, env.users["iago"])

    async def action() -> None:
        assert_success(await env.client("iago").delete(f"/messages/{mid}"))

    await action()
    body = assert_success(
        await env.client("iago").get(
            "/events", {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True}
        )
    )
    deletions = [e for e in body["events"] if e["type"] == "delete_message"]
    assert [e["message_id"] for e in deletions] == [mid]
    # Not the deleter: othello, unsubscribed, hears nothing.
    state = await register(env, env.users["othello"])
    assert_success(await env.client("iago").delete(f"/messages/{other}"))
    body = assert_success(
        await env.client("othello").get(
            "/events", {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True}
        )
    )
    assert [e for e in body["events"] if e["type"] == "delete_message"] == []
