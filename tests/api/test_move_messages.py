"""``PATCH /messages/{message_id}`` moving messages: ``propagate_mode``, other streams,
rows of who can read them, topic policies, and the moving permissions and time limits."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa

from hubbub.db.tables import message, recipient, stream, user_message, user_topic
from hubbub.queries.messages import READ
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import (
    backdate_messages,
    edit_message,
    message_flags,
    send_stream_message,
)


async def _where(env: TestEnv, message_ids: list[int]) -> list[tuple[int, str]]:
    """(stream id, topic) of each message."""
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(message.c.id, recipient.c.type_id, message.c.topic)
            .join(recipient, recipient.c.id == message.c.recipient_id)
            .where(message.c.id.in_(message_ids))
        )
        found = {r.id: (r.type_id, r.topic) for r in rows}
    return [found[mid] for mid in message_ids]


async def _history(env: TestEnv, message_id: int) -> list[dict[str, Any]]:
    async with env.services.db.read() as conn:
        raw = (
            await conn.execute(sa.select(message.c.edit_history).where(message.c.id == message_id))
        ).scalar()
    return orjson.loads(raw) if raw else []


async def _topic(
    env: TestEnv, topic: str = "t", count: int = 4, where: str = "Denmark"
) -> list[int]:
    return [
        await send_stream_message(env, "hamlet", where, f"m{i}", topic if i % 2 else topic.upper())
        for i in range(count)
    ]


async def test_propagate_modes_within_a_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    # Topics match case-insensitively: "t" and "T" are one topic.
    ids = await _topic(env)
    other = await send_stream_message(env, "hamlet", "Denmark", "elsewhere", "other")
    assert_success(await edit_message(env, "hamlet", ids[1], topic="one"))
    assert await _where(env, ids) == [
        (denmark.id, "T"),
        (denmark.id, "one"),
        (denmark.id, "T"),
        (denmark.id, "t"),
    ]
    assert_success(
        await edit_message(env, "hamlet", ids[2], topic="later", propagate_mode="change_later")
    )
    assert [t for _, t in await _where(env, ids)] == ["T", "one", "later", "later"]
    assert_success(
        await edit_message(env, "hamlet", ids[3], topic="all", propagate_mode="change_all")
    )
    assert [t for _, t in await _where(env, ids)] == ["T", "one", "all", "all"]
    assert (await _where(env, [other]))[0][1] == "other"
    # The others moved get topic-only entries; the edited one its own.
    assert [(h["prev_topic"], h["topic"]) for h in await _history(env, ids[2])] == [
        ("later", "all"),
        ("T", "later"),
    ]
    assert set((await _history(env, ids[2]))[0]) == {"user_id", "timestamp", "prev_topic", "topic"}


async def test_move_to_another_stream(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    ids = await _topic(env, count=3)
    body = assert_success(
        await edit_message(
            env,
            "hamlet",
            ids[1],
            stream_id=verona.id,
            topic="moved",
            propagate_mode="change_later",
            send_notification_to_old_thread=True,
            send_notification_to_new_thread=False,
        )
    )
    assert "ignored_parameters_unsupported" not in body
    assert await _where(env, ids) == [
        (denmark.id, "T"),
        (verona.id, "moved"),
        (verona.id, "moved"),
    ]
    entry = (await _history(env, ids[2]))[0]
    assert (entry["prev_stream"], entry["stream"]) == (denmark.id, verona.id)
    # As in Zulip, the entries of the other moved messages name the edited message's
    # topic ("t"), even where their own spelling differed ("T").
    assert (entry["prev_topic"], entry["topic"]) == ("t", "moved")
    msg = assert_success(await env.client("hamlet").get(f"/messages/{ids[1]}"))["message"]
    assert (msg["stream_id"], msg["display_recipient"], msg["subject"]) == (
        verona.id,
        "Verona",
        "moved",
    )
    # Othello (subscribed to Denmark only) lost the rows; Verona is public, so he can
    # still read the messages, as history.
    assert env.users["othello"].id not in await message_flags(env, ids[1])
    assert env.users["othello"].id in await message_flags(env, ids[0])
    msg = assert_success(await env.client("othello").get(f"/messages/{ids[1]}"))["message"]
    assert msg["flags"] == ["read", "historical"]
    # Moving to its own stream is no move.
    assert_error(
        await edit_message(env, "hamlet", ids[1], stream_id=verona.id), "Nothing to change"
    )


async def test_move_checks(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    mid = await send_stream_message(env, "hamlet", "Denmark", "hello")
    assert_error(
        await edit_message(env, "hamlet", mid, stream_id=verona.id, content="x"),
        "Cannot change message content while changing stream",
    )
    assert_error(await edit_message(env, "hamlet", mid, stream_id=99999), "Invalid stream ID")
    assert_error(await edit_message(env, "hamlet", mid, stream_id=secret.id), "Invalid stream ID")
    # Administrators too need a subscription to move into a private stream.
    assert_error(await edit_message(env, "iago", mid, stream_id=secret.id), "Invalid stream ID")
    await set_group_setting(env, "can_move_messages_between_channels_group", "role:administrators")
    assert_error(
        await edit_message(env, "hamlet", mid, stream_id=verona.id),
        "You don't have permission to move this message",
    )
    await set_group_setting(env, "can_move_messages_between_channels_group", "role:members")
    # The legacy parameter sets the stream's can_send_message_group (feature level 333).
    patch = {"stream_post_policy": 2}
    assert_success(await env.client("iago").patch(f"/streams/{verona.id}", patch))
    assert_error(
        await edit_message(env, "hamlet", mid, stream_id=verona.id),
        "You do not have permission to post in this channel.",
    )
    # The legacy parameter sets the stream's can_send_message_group (feature level 333).
    patch = {"stream_post_policy": 1}
    assert_success(await env.client("iago").patch(f"/streams/{verona.id}", patch))
    await env.set_realm(move_messages_between_streams_limit_seconds=60)
    await backdate_messages(env, [mid], 100)
    assert_error(
        await edit_message(env, "hamlet", mid, stream_id=verona.id),
        "The time limit for editing this message's stream has passed",
    )
    assert_success(await edit_message(env, "shiva", mid, stream_id=verona.id))
    assert (await _where(env, [mid]))[0][0] == verona.id


async def test_rows_when_moving_to_private_streams(env: TestEnv) -> None:
    for name in ("hamlet", "othello", "polonius"):
        await env.subscribe(name, "Denmark")
    protected = await env.subscribe("hamlet", "Protected", invite_only=True)
    await env.subscribe("iago", "Protected")
    shared = await env.subscribe("hamlet", "Shared", invite_only=True)
    await env.subscribe("iago", "Shared")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(stream)
            .where(stream.c.id == shared.id)
            .values(history_public_to_subscribers=True)
        )
    users = env.users
    first = await send_stream_message(env, "hamlet", "Denmark", "one", "a")
    assert_success(await edit_message(env, "hamlet", first, stream_id=protected.id))
    # Subscribers of a stream without shared history get read rows (being subscribed is
    # what grants access there); those who cannot follow lose theirs.
    flags = await message_flags(env, first)
    assert set(flags) == {users["hamlet"].id, users["iago"].id}
    assert flags[users["iago"].id] == READ
    assert_error(await env.client("othello").get(f"/messages/{first}"), "Invalid message(s)")
    second = await send_stream_message(env, "hamlet", "Denmark", "two", "b")
    assert_success(await edit_message(env, "hamlet", second, stream_id=shared.id))
    # Shared history needs no rows.
    assert set(await message_flags(env, second)) == {users["hamlet"].id}
    msg = assert_success(await env.client("iago").get(f"/messages/{second}"))["message"]
    assert msg["flags"] == ["read", "historical"]


async def test_stream_move_takes_only_readable_messages(env: TestEnv) -> None:
    secret = await env.subscribe("iago", "Secret", invite_only=True)
    verona = await env.subscribe("hamlet", "Verona")
    await env.subscribe("iago", "Verona")
    early = await send_stream_message(env, "iago", "Secret", "before hamlet", "t")
    await env.subscribe("hamlet", "Secret")
    late = [await send_stream_message(env, "iago", "Secret", f"m{i}", "t") for i in range(2)]
    assert_success(
        await edit_message(env, "hamlet", late[1], stream_id=verona.id, propagate_mode="change_all")
    )
    # Hamlet cannot read the message from before he subscribed, so it stays.
    assert [s for s, _ in await _where(env, [early, *late])] == [secret.id, verona.id, verona.id]


async def test_change_all_time_limit(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    ids = await _topic(env, count=5)
    await env.set_realm(move_messages_within_stream_limit_seconds=3600)
    await backdate_messages(env, ids[:3], 7200)
    body = assert_error(
        await edit_message(env, "hamlet", ids[4], topic="new", propagate_mode="change_all"),
        "You only have permission to move the 2/5 most recent messages in this topic.",
        code="MOVE_MESSAGES_TIME_LIMIT_EXCEEDED",
    )
    assert body["first_message_id_allowed_to_move"] == ids[3]
    assert (body["total_messages_in_topic"], body["total_messages_allowed_to_move"]) == (5, 2)
    assert [t for _, t in await _where(env, ids)] == ["T", "t", "T", "t", "T"]
    # What the error suggests works; moderators may move it all.
    assert_success(
        await edit_message(env, "hamlet", ids[3], topic="new", propagate_mode="change_later")
    )
    assert_success(
        await edit_message(env, "shiva", ids[0], topic="new", propagate_mode="change_all")
    )
    assert {t for _, t in await _where(env, ids)} == {"new"}


async def test_topic_policies_follow_a_whole_topic(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    await env.subscribe("othello", "Denmark")
    users = env.users
    ids = await _topic(env, topic="old", count=2)
    for name, policy in (("othello", 1), ("hamlet", 3)):
        assert_success(
            await env.client(name).post(
                "/user_topics",
                {"stream_id": denmark.id, "topic": "old", "visibility_policy": policy},
            )
        )
    # Part of the topic: policies stay.
    assert_success(await edit_message(env, "hamlet", ids[1], topic="part"))
    assert await _policies(env) == {
        (users["hamlet"].id, denmark.id, "old"): 3,
        (users["othello"].id, denmark.id, "old"): 1,
    }
    assert_success(
        await edit_message(
            env, "hamlet", ids[0], topic="new", stream_id=verona.id, propagate_mode="change_all"
        )
    )
    # The whole topic: the policies move. Othello is not subscribed to Verona, but it is
    # public, so he can still read the topic and his mute moves too.
    assert await _policies(env) == {
        (users["hamlet"].id, verona.id, "new"): 3,
        (users["othello"].id, verona.id, "new"): 1,
    }


async def _policies(env: TestEnv) -> dict[tuple[int, int, str], int]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(
                user_topic.c.user_profile_id,
                user_topic.c.stream_id,
                user_topic.c.topic_name,
                user_topic.c.visibility_policy,
            )
        )
        return {(r[0], r[1], r[2]): r[3] for r in rows}


async def test_moves_keep_read_state(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hi", "t")
    assert_success(
        await env.client("othello").post(
            "/messages/flags", {"messages": [mid], "op": "add", "flag": "starred"}
        )
    )
    assert_success(await edit_message(env, "hamlet", mid, topic="u"))
    async with env.services.db.read() as conn:
        flags = (
            await conn.execute(
                sa.select(user_message.c.flags).where(
                    user_message.c.message_id == mid,
                    user_message.c.user_profile_id == env.users["othello"].id,
                )
            )
        ).scalar_one()
    assert flags == 2
