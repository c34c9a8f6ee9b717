"""``POST /mark_all_as_read``, ``/mark_stream_as_read`` and ``/mark_topic_as_read`` (all
deprecated in Zulip 8.0, still served)."""

from __future__ import annotations

from hubbub.queries.messages import READ
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message


async def _unread(env: TestEnv, user: str, ids: list[int]) -> list[int]:
    uid = env.users[user].id
    return [mid for mid in ids if (await message_flags(env, mid)).get(uid, READ) & READ == 0]


async def _messages(env: TestEnv) -> dict[str, int]:
    for user in ("hamlet", "othello"):
        await env.subscribe(user, "Denmark")
        await env.subscribe(user, "Scotland")
    return {
        "dk_lunch": await send_stream_message(env, "hamlet", "Denmark", "a", "lunch"),
        "dk_Lunch": await send_stream_message(env, "hamlet", "Denmark", "b", "LUNCH"),
        "dk_work": await send_stream_message(env, "hamlet", "Denmark", "c", "work"),
        "scotland": await send_stream_message(env, "hamlet", "Scotland", "d", "lunch"),
        "dm": await send_direct_message(env, "hamlet", ["othello"]),
    }


async def test_mark_all_as_read(env: TestEnv) -> None:
    ids = await _messages(env)
    body = assert_success(await env.client("othello").post("/mark_all_as_read"))
    assert body["complete"] is True
    assert await _unread(env, "othello", list(ids.values())) == []
    # The sender's own (API-sent, so unread) rows are untouched.
    assert await _unread(env, "hamlet", list(ids.values())) == list(ids.values())
    # Nothing left: still a success.
    assert assert_success(await env.client("othello").post("/mark_all_as_read"))["complete"]


async def test_mark_stream_as_read(env: TestEnv) -> None:
    ids = await _messages(env)
    stream_id = (await env.subscribe("othello", "Denmark")).id
    assert_success(
        await env.client("othello").post("/mark_stream_as_read", {"stream_id": stream_id})
    )
    assert await _unread(env, "othello", list(ids.values())) == [ids["scotland"], ids["dm"]]


async def test_mark_topic_as_read(env: TestEnv) -> None:
    ids = await _messages(env)
    stream_id = (await env.subscribe("othello", "Denmark")).id
    client = env.client("othello")
    # Topics match case-insensitively.
    assert_success(
        await client.post("/mark_topic_as_read", {"stream_id": stream_id, "topic_name": "Lunch"})
    )
    assert await _unread(env, "othello", list(ids.values())) == [
        ids["dk_work"],
        ids["scotland"],
        ids["dm"],
    ]
    assert_error(
        await client.post("/mark_topic_as_read", {"stream_id": stream_id, "topic_name": "nope"}),
        "No such topic 'nope'",
    )
    # As Zulip: an empty topic name means the whole stream.
    assert_success(
        await client.post("/mark_topic_as_read", {"stream_id": stream_id, "topic_name": ""})
    )
    assert await _unread(env, "othello", list(ids.values())) == [ids["scotland"], ids["dm"]]


async def test_topic_must_have_reached_the_user(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await send_stream_message(env, "hamlet", "Denmark", "x", "history")
    # iago may read the public stream's history but received nothing in the topic.
    response = await env.client("iago").post(
        "/mark_topic_as_read", {"stream_id": denmark.id, "topic_name": "history"}
    )
    assert_error(response, "No such topic 'history'")


async def test_stream_errors(env: TestEnv) -> None:
    secret = await env.subscribe("hamlet", "secret", invite_only=True)
    public = await env.subscribe("hamlet", "Denmark")
    message_id = await send_stream_message(env, "hamlet", "secret")
    for path, extra in [
        ("/mark_stream_as_read", {}),
        ("/mark_topic_as_read", {"topic_name": "test"}),
    ]:
        for user, stream_id in [("othello", 10**6), ("othello", secret.id), ("iago", secret.id)]:
            # Private streams are invalid even for administrators who are not subscribed.
            response = await env.client(user).post(path, {"stream_id": stream_id, **extra})
            assert_error(response, "Invalid stream ID")
        # A public stream one is not subscribed to is fine (nothing to mark).
        assert_success(
            await env.client("othello").post("/mark_stream_as_read", {"stream_id": public.id})
        )
    assert_error(
        await env.client("hamlet").post("/mark_stream_as_read", {}),
        "Missing 'stream_id' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await env.client("hamlet").post("/mark_topic_as_read", {"stream_id": secret.id}),
        "Missing 'topic_name' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert await _unread(env, "hamlet", [message_id]) == [message_id]
