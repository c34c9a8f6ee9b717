"""``POST`` and ``DELETE /users/me/muted_users/{muted_user_id}`` (feature level 48)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import sqlalchemy as sa

from hubbub.actions.users import do_deactivate_user
from hubbub.clock import FakeClock
from hubbub.db.tables import muted_user
from hubbub.queries.messages import READ
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env
from tests.messages_helpers import message_flags, send_direct_message, send_stream_message

MUTED = "/users/me/muted_users"


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    """The shared ``env`` on a clock that only moves when told, so times can be compared."""
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


async def _rows(env: TestEnv) -> list[tuple[int, int, float]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(muted_user).order_by(muted_user.c.user_profile_id, muted_user.c.muted_user_id)
        )
        return [(r.user_profile_id, r.muted_user_id, r.date_muted) for r in rows]


async def _state(env: TestEnv, user: str = "hamlet") -> list[dict[str, int]]:
    body = assert_success(
        await env.client(user).post("/register", {"fetch_event_types": ["muted_users"]})
    )
    return body["muted_users"]  # type: ignore[no-any-return]


async def test_mute_and_unmute(env: TestEnv) -> None:
    hamlet, othello, iago = (env.users[n] for n in ("hamlet", "othello", "iago"))
    first = env.services.clock.now()
    assert_success(await env.client("hamlet").post(f"{MUTED}/{othello.id}"))
    env.advance(60)
    assert_success(await env.client("hamlet").post(f"{MUTED}/{iago.id}"))
    assert await _rows(env) == [(hamlet.id, iago.id, first + 60), (hamlet.id, othello.id, first)]
    assert await _state(env) == [
        {"id": othello.id, "timestamp": int(first)},
        {"id": iago.id, "timestamp": int(first + 60)},
    ]
    # Muting is one-way and personal.
    assert await _state(env, "othello") == []

    assert_success(await env.client("hamlet").delete(f"{MUTED}/{othello.id}"))
    assert await _state(env) == [{"id": iago.id, "timestamp": int(first + 60)}]
    # Muting again records the new time.
    env.advance(5)
    assert_success(await env.client("hamlet").post(f"{MUTED}/{othello.id}"))
    assert await _state(env) == [
        {"id": iago.id, "timestamp": int(first + 60)},
        {"id": othello.id, "timestamp": int(first + 65)},
    ]


async def test_bots_and_deactivated_users_can_be_muted(env: TestEnv) -> None:
    # Bots since feature level 188.
    bot = await env.create_user("bot@example.com", "Bot", bot_owner=env.users["iago"])
    assert_success(await env.client("hamlet").post(f"{MUTED}/{bot.id}"))
    othello = env.users["othello"]
    async with env.services.write() as tx:
        await do_deactivate_user(tx, othello)
    assert_success(await env.client("hamlet").post(f"{MUTED}/{othello.id}"))
    assert {m["id"] for m in await _state(env)} == {bot.id, othello.id}
    assert_success(await env.client("hamlet").delete(f"{MUTED}/{othello.id}"))
    assert_success(await env.client("hamlet").delete(f"{MUTED}/{bot.id}"))
    assert await _rows(env) == []


async def test_errors_change_nothing(env: TestEnv) -> None:
    hamlet, othello = env.users["hamlet"], env.users["othello"]
    zephyr = await env.create_realm("zephyr", "Zephyr")
    stranger = await env.create_user("stranger@example.com", "Stranger", realm=zephyr)
    assert_success(await env.client("hamlet").post(f"{MUTED}/{othello.id}"))
    before = await _rows(env)
    client = env.client("hamlet")

    assert_error(await client.post(f"{MUTED}/{hamlet.id}"), "Cannot mute self")
    assert_error(await client.post(f"{MUTED}/{othello.id}"), "User already muted")
    for missing in (stranger.id, 999999):
        assert_error(await client.post(f"{MUTED}/{missing}"), "No such user")
        assert_error(await client.delete(f"{MUTED}/{missing}"), "No such user")
    assert_error(await client.delete(f"{MUTED}/{hamlet.id}"), "User is not muted")
    assert_error(await client.delete(f"{MUTED}/{env.users['iago'].id}"), "User is not muted")
    assert await _rows(env) == before


async def test_path_must_be_an_integer(env: TestEnv) -> None:
    response = await env.client("hamlet").post(f"{MUTED}/othello")
    assert response.status_code == 404
    assert await _rows(env) == []


async def test_concurrent_mutes_of_one_user_answer_already_muted(env: TestEnv) -> None:
    """Two requests that mute the same user at once both find no row; the one whose insert
    loses on the unique index is run again and answers as it would a moment later, never
    with a server error. Several rounds, since the interleaving is up to the scheduler."""
    hamlet = env.client("hamlet")
    for user in ("desdemona", "othello", "iago", "shiva"):
        url = f"{MUTED}/{env.users[user].id}"
        first, second = await asyncio.gather(hamlet.post(url), hamlet.post(url))
        bodies = sorted([first.json()["result"], second.json()["result"]])
        assert bodies == ["error", "success"], (first.json(), second.json())
        failed = first if first.json()["result"] == "error" else second
        assert_error(failed, "User already muted")
        await hamlet.delete(url)
    assert await _rows(env) == []


async def _is_read(env: TestEnv, message_id: int, user: str) -> bool:
    return bool((await message_flags(env, message_id))[env.users[user].id] & READ)


async def test_muting_marks_the_muted_users_messages_read(env: TestEnv) -> None:
    """Every unread message the muter has from the muted user, in streams and direct
    messages alike, becomes read for the muter alone; unmuting leaves it read."""
    for user in ("hamlet", "othello", "iago"):
        await env.subscribe(user, "Denmark")
    theirs = [
        await send_stream_message(env, "othello", "Denmark", topic="lunch"),
        await send_direct_message(env, "othello", ["hamlet"]),
        await send_direct_message(env, "othello", ["hamlet", "iago"]),
        await send_stream_message(env, "othello", "Denmark", "@**Hamlet**", topic="work"),
    ]
    others = [
        await send_stream_message(env, "iago", "Denmark"),
        await send_direct_message(env, "iago", ["hamlet"]),
    ]
    hamlet = env.users["hamlet"]
    assert_success(await env.client("hamlet").post(f"{MUTED}/{env.users['othello'].id}"))
    for message_id in theirs:
        assert await _is_read(env, message_id, "hamlet")
    for message_id in others:
        assert not await _is_read(env, message_id, "hamlet")
    # Nobody else's flags change.
    assert not await _is_read(env, theirs[0], "iago")
    assert not await _is_read(env, theirs[2], "iago")
    assert_success(await env.client("hamlet").delete(f"{MUTED}/{env.users['othello'].id}"))
    for message_id in theirs:
        assert await _is_read(env, message_id, "hamlet")
    unread = assert_success(
        await env.client(hamlet).post(
            "/register", {"fetch_event_types": ["message", "update_message_flags"]}
        )
    )["unread_msgs"]
    assert unread["count"] == len(others)
