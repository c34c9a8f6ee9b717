"""The empty topic ("general chat", feature levels 334 and 370): sending to it, finding
it, moving to it, and how clients that do not allow it see it."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from hubbub.db.tables import message
from hubbub.queries.streams import get_stream_by_name
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message

WINDOW = {"anchor": "newest", "num_before": 100, "num_after": 0}


async def _stored_topics(env: TestEnv, ids: list[int]) -> list[str]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(message.c.id, message.c.topic).where(message.c.id.in_(ids))
        )
        found = {row.id: row.topic for row in rows}
    return [found[i] for i in ids]


async def _send(env: TestEnv, topic: Any, sender: str = "hamlet") -> Any:
    params = {"type": "stream", "to": "Verona", "topic": topic, "content": "hi"}
    return await env.client(sender).post("/messages", params)


async def test_register_sends_the_display_name(env: TestEnv) -> None:
    client = env.client("hamlet")
    body = assert_success(await client.post("/register", {"fetch_event_types": ["realm"]}))
    assert body["realm_empty_topic_display_name"] == "general chat"
    body = assert_success(await client.post("/register", {"fetch_event_types": ["message"]}))
    assert "realm_empty_topic_display_name" not in body


async def test_sends_that_mean_the_empty_topic(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    ids = [
        int(assert_success(await _send(env, topic))["id"])
        for topic in ("", "   ", "(no topic)", "general chat", " general chat ")
    ]
    assert await _stored_topics(env, ids) == [""] * 5
    # Only the exact display name: other spellings are ordinary topics.
    other = int(assert_success(await _send(env, "General Chat"))["id"])
    assert await _stored_topics(env, [other]) == ["General Chat"]
    assert_error(
        await env.client("hamlet").post(
            "/messages", {"type": "stream", "to": "Verona", "content": "hi"}
        ),
        "Missing topic",
    )
    assert_error(await _send(env, "lunch\x07"), "Invalid character in topic, at position 6!")


async def test_realms_that_require_topics(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    await env.set_realm(mandatory_topics=True)
    for topic in ("", "(no topic)", "general chat"):
        assert_error(await _send(env, topic), "Topics are required in this organization")
    assert_success(await _send(env, "lunch"))
    # Direct messages have no topic to require.
    await send_direct_message(env, "hamlet", ["othello"])


async def test_clients_see_the_display_name_unless_they_allow_empty(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    empty = int(assert_success(await _send(env, ""))["id"])
    named = await send_stream_message(env, "hamlet", "Verona", topic="lunch")
    dm = await send_direct_message(env, "hamlet", ["othello"])
    client = env.client("hamlet")

    def subjects(body: dict[str, Any]) -> dict[int, str]:
        return {m["id"]: m["subject"] for m in body["messages"]}

    body = assert_success(await client.get("/messages", WINDOW))
    assert subjects(body) == {empty: "general chat", named: "lunch", dm: ""}
    allowed = {**WINDOW, "allow_empty_topic_name": True}
    body = assert_success(await client.get("/messages", allowed))
    assert subjects(body) == {empty: "", named: "lunch", dm: ""}
    body = assert_success(await client.get("/messages", {"message_ids": [empty]}))
    assert subjects(body) == {empty: "general chat"}
    body = assert_success(
        await client.get("/messages", {"message_ids": [empty], "allow_empty_topic_name": True})
    )
    assert subjects(body) == {empty: ""}
    single = assert_success(await client.get(f"/messages/{empty}"))["message"]
    assert single["subject"] == "general chat"
    params = {"allow_empty_topic_name": True}
    single = assert_success(await client.get(f"/messages/{empty}", params))["message"]
    assert single["subject"] == ""


async def test_narrows_to_the_empty_topic(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    empty = [int(assert_success(await _send(env, topic))["id"]) for topic in ("", "(no topic)")]
    await send_stream_message(env, "hamlet", "Verona", "lunch", topic="lunch")
    await send_direct_message(env, "othello", ["hamlet"], "no topic here")
    client = env.client("othello")
    for operand in ("", "general chat"):
        narrow = [{"operator": "channel", "operand": "Verona"}, ["topic", operand]]
        body = assert_success(await client.get("/messages", {**WINDOW, "narrow": narrow}))
        assert [m["id"] for m in body["messages"]] == empty
        body = assert_success(await client.get("/messages", {**WINDOW, "narrow": [["topic", ""]]}))
        assert [m["id"] for m in body["messages"]] == empty
    body = assert_success(
        await client.get(
            "/messages/matches_narrow", {"msg_ids": empty, "narrow": [["topic", "general chat"]]}
        )
    )
    assert body["messages"] == {
        str(i): {"match_content": "<p>hi</p>", "match_subject": ""} for i in empty
    }


async def test_moving_to_and_from_the_empty_topic(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    ids = [await send_stream_message(env, "hamlet", "Verona", topic="lunch") for _ in range(2)]
    client = env.client("hamlet")
    moved = await client.patch(f"/messages/{ids[0]}", {"topic": "", "propagate_mode": "change_all"})
    assert assert_success(moved)
    assert await _stored_topics(env, ids) == ["", ""]
    # The display name is the empty topic, so this changes nothing.
    assert_error(
        await client.patch(f"/messages/{ids[0]}", {"topic": "general chat"}), "Nothing to change"
    )
    for resolved in ("✔ ", "✔ general chat"):
        assert_error(
            await client.patch(f"/messages/{ids[0]}", {"topic": resolved}),
            "General chat cannot be marked as resolved",
        )
    assert_success(
        await client.patch(
            f"/messages/{ids[1]}", {"topic": "dinner", "propagate_mode": "change_one"}
        )
    )
    assert await _stored_topics(env, ids) == ["", "dinner"]
    await env.set_realm(mandatory_topics=True)
    for topic in ("", "general chat", "(no topic)"):
        assert_error(
            await client.patch(f"/messages/{ids[1]}", {"topic": topic}),
            "Topics are required in this organization.",
        )
    # A direct message's own "" is no change; the checks above are a stream message's.
    dm = await send_direct_message(env, "hamlet", ["othello"])
    assert_error(await client.patch(f"/messages/{dm}", {"topic": ""}), "Nothing to change")
    assert_error(
        await client.patch(f"/messages/{dm}", {"topic": "general chat"}), "Nothing to change"
    )
    assert_error(
        await client.patch(f"/messages/{dm}", {"topic": "(no topic)"}),
        "Direct messages cannot have topics.",
    )
    assert await _stored_topics(env, ids) == ["", "dinner"]


async def test_topic_lists_and_edit_history_show_the_display_name(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    mid = int(assert_success(await _send(env, ""))["id"])
    client = env.client("hamlet")
    async with env.services.db.read() as conn:
        verona = await get_stream_by_name(conn, env.realm.id, "Verona")
    assert verona is not None
    stream_id = verona.id
    topics = assert_success(await client.get(f"/users/me/{stream_id}/topics"))["topics"]
    assert "general chat" in [t["name"] for t in topics] and "" not in [t["name"] for t in topics]
    topics = assert_success(
        await client.get(f"/users/me/{stream_id}/topics", {"allow_empty_topic_name": True})
    )["topics"]
    assert "" in [t["name"] for t in topics]
    # Moved out of the empty topic: the history names it both ways.
    assert_success(await client.patch(f"/messages/{mid}", {"topic": "lunch"}))
    history = assert_success(await client.get(f"/messages/{mid}/history"))["message_history"]
    assert [s["topic"] for s in history] == ["general chat", "lunch"]
    assert history[1]["prev_topic"] == "general chat"
    history = assert_success(
        await client.get(f"/messages/{mid}/history", {"allow_empty_topic_name": True})
    )["message_history"]
    assert [s["topic"] for s in history] == ["", "lunch"] and history[1]["prev_topic"] == ""
    # A direct message's snapshots keep their empty topic.
    dm = await send_direct_message(env, "hamlet", ["othello"], "hi")
    history = assert_success(await client.get(f"/messages/{dm}/history"))["message_history"]
    assert [s["topic"] for s in history] == [""]
