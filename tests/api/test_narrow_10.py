"""Narrows of Zulip 9.0-10.2 through the API: ``channel``/``channels`` (feature level
250), ``with`` (271), the stream/direct-message conflict and the id bound."""

from __future__ import annotations

from typing import Any

import httpx

from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message

WINDOW = {"anchor": "newest", "num_before": 100, "num_after": 0}


async def _fetch(env: TestEnv, narrow: list[Any], user: str = "hamlet") -> httpx.Response:
    return await env.client(user).get("/messages", {**WINDOW, "narrow": narrow})


async def _ids(env: TestEnv, narrow: list[Any], user: str = "hamlet") -> list[int]:
    body = assert_success(await _fetch(env, narrow, user))
    return [m["id"] for m in body["messages"]]


def _with(message_id: int | str) -> dict[str, Any]:
    return {"operator": "with", "operand": message_id}


async def _verona(env: TestEnv) -> dict[str, list[int]]:
    """Two topics of Verona and a message elsewhere, read by hamlet and othello."""
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Verona")
    await env.subscribe("hamlet", "Denmark")
    lunch = [
        await send_stream_message(env, sender, "Verona", f"lunch {i}", topic="lunch")
        for i, sender in enumerate(["hamlet", "othello", "hamlet"])
    ]
    work = [await send_stream_message(env, "othello", "Verona", "work", topic="work")]
    elsewhere = [await send_stream_message(env, "hamlet", "Denmark", "lunch", topic="lunch")]
    return {"lunch": lunch, "work": work, "elsewhere": elsewhere}


async def test_channel_and_channels_are_stream_and_streams(env: TestEnv) -> None:
    ids = await _verona(env)
    verona = ids["lunch"] + ids["work"]
    by_stream = await _ids(env, [["stream", "Verona"]])
    assert sorted(by_stream) == sorted(verona)
    stream_id = assert_success(
        await env.client("hamlet").get("/get_stream_id", {"stream": "Verona"})
    )["stream_id"]
    assert await _ids(env, [{"operator": "channel", "operand": stream_id}]) == by_stream
    assert await _ids(env, [["channel", "verona"], ["topic", "work"]]) == ids["work"]
    assert sorted(await _ids(env, [["channels", "public"]])) == sorted(verona + ids["elsewhere"])
    assert_error(
        await _fetch(env, [["channel", "Atlantis"]]),
        "Invalid narrow operator: unknown channel Atlantis",
        code="BAD_NARROW",
    )
    assert_error(
        await _fetch(env, [["channels", "private"]]),
        "Invalid narrow operator: unknown channels operand private",
        code="BAD_NARROW",
    )


async def test_with_follows_a_moved_topic(env: TestEnv) -> None:
    ids = await _verona(env)
    lunch = ids["lunch"]
    assert await _ids(env, [_with(lunch[1])]) == lunch
    # The operand may be a string; the conversation replaces stale stream/topic terms,
    # and other terms still filter.
    stale = [["stream", "Denmark"], ["topic", "work"], _with(str(lunch[1]))]
    assert await _ids(env, stale) == lunch
    assert await _ids(env, [_with(lunch[0]), ["sender", "othello@example.com"]]) == [lunch[1]]
    moved = await env.client("hamlet").patch(
        f"/messages/{lunch[0]}", {"topic": "✔ lunch", "propagate_mode": "change_all"}
    )
    assert_success(moved)
    assert await _ids(env, [["stream", "Verona"], ["topic", "lunch"], _with(lunch[2])]) == lunch
    body = assert_success(await _fetch(env, [_with(lunch[2])]))
    assert {m["subject"] for m in body["messages"]} == {"✔ lunch"}


async def test_with_names_direct_message_conversations(env: TestEnv) -> None:
    sent = await send_direct_message(env, "hamlet", ["othello"], "to othello")
    received = await send_direct_message(env, "othello", ["hamlet"], "to hamlet")
    await send_direct_message(env, "hamlet", ["iago"], "to iago")
    group = [
        await send_direct_message(env, "iago", ["hamlet", "othello"], "group"),
        await send_direct_message(env, "hamlet", ["iago", "othello"], "group too"),
    ]
    to_self = await send_direct_message(env, "hamlet", ["hamlet"], "note")
    # Whichever way a one-to-one message went, its conversation is the pair's.
    assert await _ids(env, [_with(received)]) == [sent, received]
    assert await _ids(env, [_with(sent)], user="othello") == [sent, received]
    assert await _ids(env, [_with(group[0])]) == group
    assert await _ids(env, [_with(to_self)]) == [to_self]
    # A dm term is replaced; a stream term of the narrow goes too (no conflict remains).
    assert await _ids(env, [["dm", "iago@example.com"], _with(sent)]) == [sent, received]
    assert await _ids(env, [["stream", "Verona"], _with(sent)]) == [sent, received]


async def test_with_an_unreadable_message(env: TestEnv) -> None:
    ids = await _verona(env)
    await env.subscribe("othello", "secret", invite_only=True)
    hidden = await send_stream_message(env, "othello", "secret", "psst", topic="lunch")
    conversation = [["stream", "Verona"], ["topic", "lunch"]]
    # Ignored when the other terms name a conversation, for a message that cannot be read
    # as for one that does not exist.
    for missing in (hidden, 10**8, 3_000_000_000, -4):
        assert await _ids(env, [*conversation, _with(missing)]) == ids["lunch"]
    dm = await send_direct_message(env, "othello", ["hamlet"], "hi")
    assert await _ids(env, [["dm", "othello@example.com"], _with(hidden)]) == [dm]
    # Otherwise an error.
    for narrow in ([_with(hidden)], [["stream", "Verona"], _with(hidden)], [_with("x1")]):
        body = assert_error(
            await _fetch(env, narrow),
            "Invalid narrow operator: Invalid 'with' operator",
            code="BAD_NARROW",
        )
        assert body["desc"] == "Invalid 'with' operator"
    body = assert_error(
        await _fetch(env, [_with(ids["work"][0]), _with(ids["work"][0])]),
        "Invalid narrow operator combination: Duplicate 'with' operators.",
        code="BAD_NARROW",
    )
    assert body["desc"] == "Duplicate 'with' operators."


async def test_with_in_other_narrow_endpoints(env: TestEnv) -> None:
    ids = await _verona(env)
    lunch, work = ids["lunch"], ids["work"]
    client = env.client("othello")
    body = assert_success(
        await client.get(
            "/messages/matches_narrow", {"msg_ids": lunch + work, "narrow": [_with(lunch[0])]}
        )
    )
    assert sorted(body["messages"]) == sorted(str(i) for i in lunch)
    params = {"anchor": "oldest", "num_before": 0, "num_after": 10, "op": "add", "flag": "starred"}
    body = assert_success(
        await client.post("/messages/flags/narrow", {**params, "narrow": [_with(lunch[0])]})
    )
    assert body["updated_count"] == 3
    othello = env.users["othello"].id
    starred = [(await message_flags(env, mid))[othello] & 2 != 0 for mid in lunch + work]
    assert starred == [True, True, True, False]
    # Event queues cannot filter by conversation (as Zulip).
    assert_error(
        await client.post("/register", {"narrow": [_with(lunch[0])]}),
        "Operator with not supported.",
    )


async def test_channel_messages_and_direct_messages_conflict(env: TestEnv) -> None:
    await _verona(env)
    both = "No message can be both a channel message and direct message"
    for narrow in (
        [["channel", "Verona"], ["is", "dm"]],
        [["topic", "lunch"], ["dm-including", "othello@example.com"]],
        [["-is", "dm"], ["dm", "othello@example.com"]],
    ):
        body = assert_error(
            await _fetch(env, narrow), f"Invalid narrow operator: {both}", code="BAD_NARROW"
        )
        assert body["desc"] == both
    # Negated terms of the other kind are fine.
    assert await _ids(env, [["channel", "Verona"], ["-is", "dm"], ["-dm", "iago@example.com"]])


async def test_register_narrow_by_channel(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Verona")
    await env.subscribe("hamlet", "Denmark")
    client = env.client("hamlet")
    narrow = [{"operator": "channel", "operand": "Verona"}]
    queue = assert_success(
        await client.post("/register", {"event_types": ["message"], "narrow": narrow})
    )["queue_id"]
    wanted = await send_stream_message(env, "hamlet", "Verona", "in")
    await send_stream_message(env, "hamlet", "Denmark", "out")
    body = assert_success(
        await client.get("/events", {"queue_id": queue, "last_event_id": -1, "dont_block": True})
    )
    assert [e["message"]["id"] for e in body["events"] if e["type"] == "message"] == [wanted]


async def test_id_operand_bounds(env: TestEnv) -> None:
    ids = await _verona(env)
    first = ids["lunch"][0]
    assert await _ids(env, [{"operator": "id", "operand": first}]) == [first]
    assert await _ids(env, [{"operator": "id", "operand": 2**31 - 1}]) == []
    for operand in (2**31, "2147483648", -1, "1,2"):
        assert_error(
            await _fetch(env, [{"operator": "id", "operand": operand}]),
            "Invalid narrow operator: Invalid message ID",
            code="BAD_NARROW",
        )
