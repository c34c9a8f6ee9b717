"""``DELETE /messages/{message_id}``: who may delete what, and what deleting removes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import message, reaction, submessage, user_message
from hubbub.models import Role
from hubbub.settings import Settings
from tests.group_settings_helpers import set_group_setting
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.messages_helpers import send_direct_message, send_stream_message

NO_PERMISSION = "You don't have permission to delete this message"
TOO_LATE = "The time limit for deleting this message has passed"
EVERYONE, MODERATORS, ADMINISTRATORS = "role:everyone", "role:moderators", "role:administrators"


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    """The shared ``env`` on a clock that only moves when told (the deletion time limit)."""
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


async def _exists(env: TestEnv, message_id: int) -> bool:
    async with env.services.db.read() as conn:
        found = await conn.execute(sa.select(message.c.id).where(message.c.id == message_id))
        return found.first() is not None


async def _search(env: TestEnv, user: str, word: str) -> list[int]:
    body = assert_success(
        await env.client(user).get(
            "/messages",
            {
                "anchor": "newest",
                "num_before": 50,
                "num_after": 0,
                "narrow": [{"operator": "search", "operand": word}],
            },
        )
    )
    return [m["id"] for m in body["messages"]]


async def test_admin_deletes_any_message_and_everything_attached(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    doomed = await send_stream_message(env, "hamlet", "Denmark", "elsinore ghost", "castle")
    kept = await send_stream_message(env, "hamlet", "Denmark", "elsinore guard", "castle")
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(reaction).values(
                message_id=doomed,
                user_profile_id=othello.id,
                emoji_name="smile",
                emoji_code="1f642",
                reaction_type="unicode_emoji",
            )
        )
        await conn.execute(
            sa.insert(submessage).values(
                message_id=doomed, sender_id=hamlet.id, msg_type="widget", content="{}"
            )
        )
    assert sorted(await _search(env, "othello", "elsinore")) == [doomed, kept]

    # Administrators (can_delete_any_message_group's default) may delete anyone's message,
    # whoever may delete their own.
    await set_group_setting(env, "can_delete_own_message_group", EVERYONE)
    assert_success(await env.client("iago").delete(f"/messages/{doomed}"))

    assert not await _exists(env, doomed) and await _exists(env, kept)
    async with env.services.db.read() as conn:
        for table in (user_message, reaction, submessage):
            rows = await conn.execute(sa.select(table).where(table.c.message_id == doomed))
            assert rows.first() is None, table.name
        kept_rows = await conn.execute(
            sa.select(user_message.c.user_profile_id).where(user_message.c.message_id == kept)
        )
        assert {uid for (uid,) in kept_rows} == {hamlet.id, othello.id}
    # The search index forgot it (its triggers), and the message cannot be fetched.
    assert await _search(env, "othello", "elsinore") == [kept]
    assert await _search(env, "othello", "ghost") == []
    assert_error(await env.client("othello").get(f"/messages/{doomed}"), "Invalid message(s)")
    # Deleting it again: it no longer exists.
    assert_error(await env.client("iago").delete(f"/messages/{doomed}"), "Invalid message(s)")


async def test_own_messages_follow_the_realm_setting(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("shiva", "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark")
    # Only administrators delete messages, their own included.
    await set_group_setting(env, "can_delete_own_message_group", ADMINISTRATORS)
    assert_error(await env.client("hamlet").delete(f"/messages/{first}"), NO_PERMISSION)
    assert await _exists(env, first)

    await set_group_setting(env, "can_delete_own_message_group", MODERATORS)
    assert_error(await env.client("hamlet").delete(f"/messages/{first}"), NO_PERMISSION)
    by_shiva = await send_stream_message(env, "shiva", "Denmark")
    assert_success(await env.client("shiva").delete(f"/messages/{by_shiva}"))
    # A moderator is not an administrator: others' messages stay out of reach.
    assert_error(await env.client("shiva").delete(f"/messages/{first}"), NO_PERMISSION)

    await set_group_setting(env, "can_delete_own_message_group", EVERYONE)
    assert_success(await env.client("hamlet").delete(f"/messages/{first}"))
    assert not await _exists(env, first)


async def test_delete_any_message_group(env: TestEnv) -> None:
    """Members of can_delete_any_message_group (feature level 281) delete any message they
    can read, without the time limit; administrators outside it are ordinary users."""
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("shiva", "Denmark")
    await env.subscribe("iago", "Denmark")
    by_hamlet = await send_stream_message(env, "hamlet", "Denmark")
    assert_error(await env.client("shiva").delete(f"/messages/{by_hamlet}"), NO_PERMISSION)
    await set_group_setting(env, "can_delete_any_message_group", MODERATORS)
    env.advance(3600)
    assert_success(await env.client("shiva").delete(f"/messages/{by_hamlet}"))
    hamlet_group = {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []}
    await set_group_setting(env, "can_delete_any_message_group", hamlet_group)
    by_iago = await send_stream_message(env, "iago", "Denmark")
    assert_error(await env.client("shiva").delete(f"/messages/{by_iago}"), NO_PERMISSION)
    assert_success(await env.client("hamlet").delete(f"/messages/{by_iago}"))


async def test_others_messages_except_ones_own_bots(env: TestEnv) -> None:
    await set_group_setting(env, "can_delete_own_message_group", EVERYONE)
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    by_hamlet = await send_stream_message(env, "hamlet", "Denmark")
    assert_error(await env.client("othello").delete(f"/messages/{by_hamlet}"), NO_PERMISSION)
    direct = await send_direct_message(env, "hamlet", ["othello"])
    # The recipient of a direct message may not delete it either.
    assert_error(await env.client("othello").delete(f"/messages/{direct}"), NO_PERMISSION)

    bot = await env.create_user("bot-bot@example.com", "Bot", bot_owner=env.users["hamlet"])
    await env.subscribe(bot, "Denmark")
    params = {"type": "stream", "to": "Denmark", "topic": "t", "content": "beep"}
    by_bot = int(assert_success(await env.client(bot).post("/messages", params))["id"])
    assert_error(await env.client("othello").delete(f"/messages/{by_bot}"), NO_PERMISSION)
    assert_success(await env.client("hamlet").delete(f"/messages/{by_bot}"))
    assert not await _exists(env, by_bot)


async def test_time_limit(env: TestEnv) -> None:
    await set_group_setting(env, "can_delete_own_message_group", EVERYONE)
    await env.subscribe("hamlet", "Denmark")
    on_time = await send_stream_message(env, "hamlet", "Denmark")
    late = await send_stream_message(env, "hamlet", "Denmark")
    # Zulip's default limit is 600 s; a message exactly that old may still go.
    env.advance(600)
    assert_success(await env.client("hamlet").delete(f"/messages/{on_time}"))
    env.advance(1)
    assert_error(await env.client("hamlet").delete(f"/messages/{late}"), TOO_LATE)
    assert await _exists(env, late)

    await env.set_realm(message_content_delete_limit_seconds=3600)
    assert_success(await env.client("hamlet").delete(f"/messages/{late}"))

    old = await send_stream_message(env, "hamlet", "Denmark")
    env.advance(3601)
    assert_error(await env.client("hamlet").delete(f"/messages/{old}"), TOO_LATE)
    # Administrators have no time limit.
    older = await send_stream_message(env, "iago", "Denmark")
    env.advance(10 * 86400)
    assert_success(await env.client("iago").delete(f"/messages/{older}"))
    # "unlimited" (null) lifts the limit for everyone.
    await env.set_realm(message_content_delete_limit_seconds="unlimited")
    assert_success(await env.client("hamlet").delete(f"/messages/{old}"))


async def test_messages_one_cannot_read(env: TestEnv) -> None:
    assert_error(await env.client("iago").delete("/messages/999999"), "Invalid message(s)")
    await env.subscribe("hamlet", "Secret", invite_only=True)
    secret = await send_stream_message(env, "hamlet", "Secret")
    # An administrator outside a private stream cannot read its messages, so cannot
    # delete them (the same error as for a message that does not exist).
    assert_error(await env.client("iago").delete(f"/messages/{secret}"), "Invalid message(s)")
    direct = await send_direct_message(env, "hamlet", ["othello"])
    assert_error(await env.client("iago").delete(f"/messages/{direct}"), "Invalid message(s)")
    assert await _exists(env, secret) and await _exists(env, direct)
    # Subscribing does not help with a private stream's protected history (the default),
    # but messages received from then on are the administrator's to delete.
    await env.subscribe("iago", "Secret")
    assert_error(await env.client("iago").delete(f"/messages/{secret}"), "Invalid message(s)")
    later = await send_stream_message(env, "hamlet", "Secret")
    assert_success(await env.client("iago").delete(f"/messages/{later}"))
    assert await _exists(env, secret) and not await _exists(env, later)


async def test_other_realms_messages_are_invalid(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    mine = await send_stream_message(env, "hamlet", "Denmark")
    other = await env.create_realm("zephyr", "Zephyr")
    stranger = await env.create_user(
        "admin@zephyr.example.com", "Admin", role=Role.ADMINISTRATOR, realm=other
    )
    client = env.client(stranger, host="zephyr.localhost")
    assert_error(await client.delete(f"/messages/{mine}"), "Invalid message(s)")
    assert await _exists(env, mine)
