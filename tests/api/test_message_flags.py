"""``POST /messages/flags``: editable flags, Zulip's errors, historical rows."""

from __future__ import annotations

import asyncio

import pytest

from hubbub.actions.delete_message import do_delete_messages
from hubbub.queries.messages import HISTORICAL, READ, STARRED
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message


async def _flags(env: TestEnv, user: str, message_id: int) -> list[str]:
    body = assert_success(await env.client(user).get(f"/messages/{message_id}"))
    return body["message"]["flags"]  # type: ignore[no-any-return]


async def _update(env: TestEnv, user: str, op: str, flag: str, ids: list[int]) -> dict[str, object]:
    return assert_success(
        await env.client(user).post("/messages/flags", {"messages": ids, "op": op, "flag": flag})
    )


async def test_star_read_and_collapse(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark", "one")
    second = await send_stream_message(env, "hamlet", "Denmark", "two")
    body = await _update(env, "othello", "add", "starred", [second, first])
    # Zulip echoes the ids it was given.
    assert body["messages"] == [second, first]
    assert await _flags(env, "othello", first) == ["starred"]
    await _update(env, "othello", "add", "read", [first])
    await _update(env, "othello", "add", "collapsed", [first])
    assert await _flags(env, "othello", first) == ["read", "starred", "collapsed"]
    await _update(env, "othello", "remove", "starred", [first, second])
    await _update(env, "othello", "remove", "collapsed", [first])
    assert await _flags(env, "othello", first) == ["read"]
    assert await _flags(env, "othello", second) == []
    # Only othello's rows changed.
    hamlet = env.users["hamlet"].id
    assert (await message_flags(env, first))[hamlet] == 0
    # Marking unread again; an empty list is fine.
    await _update(env, "othello", "remove", "read", [first])
    assert await _flags(env, "othello", first) == []
    assert (await _update(env, "othello", "add", "read", []))["messages"] == []


@pytest.mark.parametrize(
    ("flag", "op", "msg"),
    [
        ("foo", "add", "Invalid flag: 'foo'"),
        # The pre-feature-level-224 name is no longer a flag.
        ("wildcard_mentioned", "add", "Invalid flag: 'wildcard_mentioned'"),
        ("is_private", "add", "Invalid flag: 'is_private'"),
        ("mentioned", "add", "Flag not editable: 'mentioned'"),
        ("historical", "remove", "Flag not editable: 'historical'"),
        ("has_alert_word", "add", "Flag not editable: 'has_alert_word'"),
        ("force_collapse", "add", "Flag not editable: 'force_collapse'"),
        ("starred", "toggle", "Invalid message flag operation: 'toggle'"),
        # The flag is checked before the operation.
        ("foo", "toggle", "Invalid flag: 'foo'"),
    ],
)
async def test_flag_errors(env: TestEnv, flag: str, op: str, msg: str) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    response = await env.client("hamlet").post(
        "/messages/flags", {"messages": [message_id], "op": op, "flag": flag}
    )
    assert_error(response, msg)
    assert (await message_flags(env, message_id))[env.users["hamlet"].id] == 0


async def test_missing_arguments(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_error(
        await client.post("/messages/flags", {"messages": [1], "flag": "read"}),
        "Missing 'op' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await client.post("/messages/flags", {"op": "add", "flag": "read"}),
        "Missing 'messages' argument",
        code="REQUEST_VARIABLE_MISSING",
    )


async def test_history_gets_a_historical_row(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    iago = env.users["iago"].id
    # iago is not subscribed: the message is readable history, already "read".
    await _update(env, "iago", "add", "read", [message_id])
    assert iago not in await message_flags(env, message_id)
    await _update(env, "iago", "remove", "starred", [message_id])
    assert iago not in await message_flags(env, message_id)
    # Starring it creates the row: historical, read, starred.
    await _update(env, "iago", "add", "starred", [message_id])
    assert (await message_flags(env, message_id))[iago] == HISTORICAL | READ | STARRED
    assert await _flags(env, "iago", message_id) == ["read", "starred", "historical"]
    await _update(env, "iago", "remove", "starred", [message_id])
    assert (await message_flags(env, message_id))[iago] == HISTORICAL | READ


async def test_marking_unread(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    old = await send_stream_message(env, "hamlet", "Denmark")
    othello = env.users["othello"].id
    # Not subscribed: marking unread skips stream messages (no row is made).
    await _update(env, "othello", "remove", "read", [old])
    assert othello not in await message_flags(env, old)
    # Subscribed later: the old message is history, marked unread in a historical row.
    await env.subscribe("othello", "Denmark")
    await _update(env, "othello", "remove", "read", [old])
    assert (await message_flags(env, old))[othello] == HISTORICAL
    assert await _flags(env, "othello", old) == ["historical"]
    # Direct messages are not subject to subscriptions.
    dm = await send_direct_message(env, "hamlet", ["othello"], read_by_sender=True)
    await _update(env, "hamlet", "remove", "read", [dm])
    assert (await message_flags(env, dm))[env.users["hamlet"].id] & READ == 0


async def test_unreadable_messages(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "secret", invite_only=True)
    public = await send_stream_message(env, "hamlet", "Denmark")
    private = await send_stream_message(env, "hamlet", "secret")
    dm = await send_direct_message(env, "hamlet", ["othello"])
    for user, message_id in [("iago", private), ("polonius", public), ("iago", dm)]:
        response = await env.client(user).post(
            "/messages/flags", {"messages": [message_id], "op": "add", "flag": "starred"}
        )
        assert_error(response, "Invalid message(s)")
    # A missing id too, and nothing of the request is applied.
    response = await env.client("hamlet").post(
        "/messages/flags", {"messages": [public, 10**6], "op": "add", "flag": "starred"}
    )
    assert_error(response, "Invalid message(s)")
    assert (await message_flags(env, public))[env.users["hamlet"].id] == 0
    # Adding "read" never needs a row, so Zulip does not look at such ids at all.
    body = await _update(env, "iago", "add", "read", [private, 10**6])
    assert body["messages"] == [private, 10**6]
    assert env.users["iago"].id not in await message_flags(env, private)


async def test_no_historical_row_for_a_message_deleted_meanwhile(env: TestEnv) -> None:
    """Starring history while the message is being deleted waits for the deletion and then
    refuses, instead of leaving a row for a message that is gone (on PostgreSQL no foreign
    key guards ``user_message``, migration 0011: the history check locks the message)."""
    await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    form = {"messages": [message_id], "op": "add", "flag": "starred"}
    async with env.services.write() as tx:
        assert await do_delete_messages(tx, env.realm.id, [message_id]) == [message_id]
        star = asyncio.create_task(env.client("iago").post("/messages/flags", form))
        await asyncio.sleep(0.5)
        # Waiting for the deletion: the row lock (PostgreSQL), the single writer (SQLite).
        assert not star.done()
    assert_error(await star, "Invalid message(s)")
    assert await message_flags(env, message_id) == {}
