"""``GET /messages/{message_id}/read_receipts`` (feature level 137)."""

from __future__ import annotations

from hubbub.models import User
from tests.helpers import TestEnv, assert_error, assert_success
from tests.messages_helpers import send_stream_message


async def _receipts(env: TestEnv, viewer: str | User, message_id: int) -> list[int]:
    body = assert_success(await env.client(viewer).get(f"/messages/{message_id}/read_receipts"))
    return body["user_ids"]  # type: ignore[no-any-return]


async def _read(env: TestEnv, user: str | User, message_id: int) -> None:
    assert_success(
        await env.client(user).post(
            "/messages/flags", {"messages": [message_id], "op": "add", "flag": "read"}
        )
    )


async def test_who_read_a_message(env: TestEnv) -> None:
    users = env.users
    bot = await env.create_user("bot@example.com", "Bot", bot_owner=users["hamlet"])
    cordelia = await env.create_user("cordelia@example.com", "Cordelia")
    for user in ("hamlet", "othello", "iago", "shiva", bot, cordelia):
        await env.subscribe(user, "Denmark")
    # The sender has read it (read_by_sender) but is never listed.
    message_id = await send_stream_message(env, "hamlet", "Denmark", read_by_sender=True)
    assert await _receipts(env, "hamlet", message_id) == []
    for user in ("othello", "iago", bot, cordelia):
        await _read(env, user, message_id)
    # Bots count; shiva has not read it.
    expected = sorted([users["othello"].id, users["iago"].id, bot.id, cordelia.id])
    assert await _receipts(env, "shiva", message_id) == expected
    # The viewer appears once they have read it; marking unread takes them out again.
    await _read(env, "shiva", message_id)
    assert users["shiva"].id in await _receipts(env, "shiva", message_id)
    assert_success(
        await env.client("shiva").post(
            "/messages/flags", {"messages": [message_id], "op": "remove", "flag": "read"}
        )
    )
    assert await _receipts(env, "shiva", message_id) == expected
    # iago turns read receipts off; cordelia is deactivated.
    assert_success(await env.client("iago").patch("/settings", {"send_read_receipts": False}))
    assert_success(await env.client("iago").delete(f"/users/{cordelia.id}"))
    expected = sorted([users["othello"].id, bot.id])
    assert await _receipts(env, "shiva", message_id) == expected


async def test_muting_hides_receipts_both_ways(env: TestEnv) -> None:
    users = env.users
    for user in ("hamlet", "othello", "iago", "shiva"):
        await env.subscribe(user, "Denmark")
    message_id = await send_stream_message(env, "hamlet", "Denmark")
    for user in ("othello", "iago"):
        await _read(env, user, message_id)
    everyone = sorted([users["othello"].id, users["iago"].id])
    # othello muted shiva: shiva does not see othello's receipt.
    assert_success(await env.client("othello").post(f"/users/me/muted_users/{users['shiva'].id}"))
    assert await _receipts(env, "shiva", message_id) == [users["iago"].id]
    assert await _receipts(env, "hamlet", message_id) == everyone
    # hamlet muted iago: hamlet does not see iago's.
    assert_success(await env.client("hamlet").post(f"/users/me/muted_users/{users['iago'].id}"))
    assert await _receipts(env, "hamlet", message_id) == [users["othello"].id]


async def test_history_and_errors(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("hamlet", "secret", invite_only=True)
    public = await send_stream_message(env, "hamlet", "Denmark")
    private = await send_stream_message(env, "hamlet", "secret")
    # A user who stars history gets a (read) row and shows up; readable history is visible.
    assert_success(
        await env.client("iago").post(
            "/messages/flags", {"messages": [public], "op": "add", "flag": "starred"}
        )
    )
    assert await _receipts(env, "othello", public) == [env.users["iago"].id]
    for user, message_id in [("polonius", public), ("othello", private), ("othello", 10**6)]:
        response = await env.client(user).get(f"/messages/{message_id}/read_receipts")
        assert_error(response, "Invalid message(s)")
    assert_success(await env.client("desdemona").patch("/realm", {"enable_read_receipts": False}))
    assert_error(
        await env.client("othello").get(f"/messages/{public}/read_receipts"),
        "Read receipts are disabled in this organization.",
    )
    # Access is checked first.
    assert_error(
        await env.client("othello").get(f"/messages/{private}/read_receipts"),
        "Invalid message(s)",
    )
