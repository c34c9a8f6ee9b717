"""``POST /users/me/presence``, ``GET /users/{user_id_or_email}/presence`` and
``GET /realm/presence``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.db.tables import realm, user_presence, user_setting
from hubbub.queries import presence as presence_queries
from hubbub.queries.presence import get_realm_presences
from tests.helpers import TestEnv, assert_error, assert_success
from tests.presence_helpers import START, ping, presence_env  # noqa: F401 (fixture env)

PRESENCE = "/users/me/presence"


async def _row(env: TestEnv, user: str) -> tuple[Any, Any] | None:
    async with env.services.db.read() as conn:
        row = (
            await conn.execute(
                sa.select(
                    user_presence.c.last_active_time, user_presence.c.last_connected_time
                ).where(user_presence.c.user_profile_id == env.users[user].id)
            )
        ).first()
    return None if row is None else (row[0], row[1])


async def _set_realm_setting(env: TestEnv, name: str, value: Any) -> None:
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm)
            .where(realm.c.id == env.realm.id)
            .values(settings=orjson.dumps({name: value}).decode())
        )


async def _disable_presence_for(env: TestEnv, user: str) -> None:
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.insert(user_setting).values(
                user_profile_id=env.users[user].id, settings='{"presence_enabled": false}'
            )
        )


async def test_first_ping_creates_row_and_returns_presences(env: TestEnv) -> None:
    body = await ping(env, "hamlet")
    assert await _row(env, "hamlet") == (START, START)
    website = {"client": "website", "status": "active", "timestamp": START, "pushable": False}
    assert body == {
        "result": "success",
        "msg": "",
        "presences": {
            "hamlet@example.com": {
                "website": website,
                "aggregated": {"client": "website", "status": "active", "timestamp": START},
            }
        },
        "server_timestamp": START + 0.25,
        # The realm's first presence write (feature level 263).
        "presence_last_update_id": 1,
    }
    # The modern form, keyed by user id.
    body = await ping(env, "othello", "idle", slim_presence=True)
    assert body["presence_last_update_id"] == 2
    assert body["presences"] == {
        str(env.users["hamlet"].id): {"active_timestamp": START, "idle_timestamp": START},
        str(env.users["othello"].id): {"active_timestamp": 0, "idle_timestamp": START},
    }
    assert await _row(env, "othello") == (None, START)
    assert "zephyr_mirror_active" not in body


async def test_ping_only_and_new_user_input(env: TestEnv) -> None:
    body = await ping(env, "hamlet", ping_only=True, new_user_input=True)
    assert body == {"result": "success", "msg": ""}
    assert await _row(env, "hamlet") == (START, START)


async def test_pings_rewrite_times_at_most_once_a_minute(env: TestEnv) -> None:
    await ping(env, "hamlet")
    env.advance(30)
    await ping(env, "hamlet")
    assert await _row(env, "hamlet") == (START, START)
    env.advance(30)  # 60 s after the first: both times move
    await ping(env, "hamlet")
    assert await _row(env, "hamlet") == (START + 60, START + 60)
    env.advance(60)
    await ping(env, "hamlet", "idle")
    assert await _row(env, "hamlet") == (START + 60, START + 120)
    body = await ping(env, "hamlet", "idle")
    website = body["presences"]["hamlet@example.com"]["website"]
    # Last active 60 s before the last connection: still "active" in the legacy form.
    assert (website["status"], website["timestamp"]) == ("active", START + 60)
    env.advance(60)
    body = await ping(env, "hamlet", "idle")
    website = body["presences"]["hamlet@example.com"]["website"]
    assert (website["status"], website["timestamp"]) == ("idle", START + 180)


async def test_invalid_status_changes_nothing(env: TestEnv) -> None:
    resp = await env.client("hamlet").post(PRESENCE, {"status": "away"})
    assert_error(resp, "Invalid status: away")
    assert await _row(env, "hamlet") is None
    assert_error(
        await env.client("hamlet").post(PRESENCE, {}),
        "Missing 'status' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await env.client("hamlet").post(PRESENCE, {"status": "active", "ping_only": "maybe"}),
        "ping_only is not valid JSON",
    )


async def test_bots_have_no_presence(env: TestEnv) -> None:
    bot = await env.create_user("bot@example.com", "Bot", bot_owner=env.users["hamlet"])
    resp = await env.client(bot).post(PRESENCE, {"status": "active"})
    assert_error(resp, "This endpoint does not accept bot requests.")
    resp = await env.client("hamlet").get(f"/users/{bot.id}/presence")
    assert_error(resp, "Presence is not supported for bot users.")


async def test_presence_enabled_off_stores_nothing(env: TestEnv) -> None:
    await _disable_presence_for(env, "hamlet")
    body = await ping(env, "hamlet")
    assert body["presences"] == {}
    assert await _row(env, "hamlet") is None


async def test_realm_presence_disabled_reports_nothing(env: TestEnv) -> None:
    await ping(env, "othello")
    await _set_realm_setting(env, "presence_disabled", True)
    body = await ping(env, "hamlet")
    assert body["presences"] == {}
    # Rows are still kept, as in Zulip.
    assert await _row(env, "hamlet") == (START, START)
    body = assert_success(await env.client("iago").get("/realm/presence"))
    assert body["presences"] == {}


async def test_realm_presence_two_week_window(env: TestEnv) -> None:
    await ping(env, "hamlet")
    env.advance(10 * 24 * 3600)
    await ping(env, "othello", "idle")
    body = assert_success(await env.client("polonius").get("/realm/presence"))
    assert sorted(body["presences"]) == ["hamlet@example.com", "othello@example.com"]
    assert body["server_timestamp"] == env.services.clock.now()
    env.advance(5 * 24 * 3600)
    body = assert_success(await env.client("polonius").get("/realm/presence"))
    assert sorted(body["presences"]) == ["othello@example.com"]


async def test_get_user_presence(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    resp = await env.client("othello").get(f"/users/{hamlet.id}/presence")
    assert_error(resp, f"No presence data for {hamlet.id}")
    resp = await env.client("othello").get("/users/hamlet@example.com/presence")
    assert_error(resp, "No presence data for hamlet@example.com")
    await ping(env, "hamlet")
    expected = {"timestamp": START, "status": "active"}
    for key in (str(hamlet.id), "hamlet@example.com", "HAMLET@example.com"):
        body = assert_success(await env.client("othello").get(f"/users/{key}/presence"))
        assert body["presence"] == {"website": expected, "aggregated": expected}
    env.advance(141)
    body = assert_success(await env.client("othello").get(f"/users/{hamlet.id}/presence"))
    assert body["presence"] == {
        "website": expected,
        "aggregated": {"timestamp": START, "status": "offline"},
    }


async def test_get_user_presence_no_such_user(env: TestEnv) -> None:
    for key in ("9999", "nobody@example.com"):
        assert_error(await env.client("hamlet").get(f"/users/{key}/presence"), "No such user")
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@example.com", "Stranger", realm=other)
    resp = await env.client("hamlet").get(f"/users/{stranger.id}/presence")
    assert_error(resp, "No such user")
    assert_success(await env.client("hamlet").post("/users/me/presence", {"status": "active"}))
    assert_success(await env.client("iago").delete(f"/users/{env.users['hamlet'].id}"))
    resp = await env.client("othello").get(f"/users/{env.users['hamlet'].id}/presence")
    assert_error(resp, "No such user")
    body = assert_success(await env.client("othello").get("/realm/presence"))
    assert body["presences"] == {}


async def test_answer_entries_follow_every_change(env: TestEnv) -> None:
    """The presence answer reuses each user's serialized entry while their row is
    unchanged (``get_realm_presences_json``); it must always equal the dictionary the
    /register state is built from."""

    async def both_forms(user: str) -> None:
        for slim in (False, True):
            body = await ping(env, user, slim_presence=slim)
            async with env.services.db.read() as conn:
                now = env.services.clock.now()
                expected, newest = await get_realm_presences(conn, env.realm, now=now, slim=slim)
            assert body["presences"] == expected, slim
            assert body["presence_last_update_id"] == newest, slim

    await ping(env, "hamlet")
    await ping(env, "othello", "idle")
    await both_forms("polonius")
    env.advance(60)
    await ping(env, "hamlet", "idle")
    await both_forms("polonius")
    # Nobody may see othello's real address: his API email changes.
    assert_success(await env.client("othello").patch("/settings", {"email_address_visibility": 4}))
    othello = await env.reload(env.users["othello"])
    assert othello.email != "othello@example.com"
    await both_forms("polonius")
    body = await ping(env, "polonius")
    assert othello.email in body["presences"]
    assert "othello@example.com" not in body["presences"]


async def test_answers_keep_the_rows_a_second(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server process answers pings from the realm's rows as it read them at most
    ``PRESENCE_ANSWER_SECONDS`` before: its own presence writes and user changes reach
    them at once, another process's writes after that time."""
    await ping(env, "hamlet")
    await ping(env, "polonius")
    body = await ping(env, "othello")
    assert set(body["presences"]) == {
        "hamlet@example.com",
        "othello@example.com",
        "polonius@example.com",
    }
    # Another worker records hamlet idle since a minute ago.
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(user_presence)
            .where(user_presence.c.user_profile_id == env.users["hamlet"].id)
            .values(last_active_time=START - 300, last_connected_time=START - 60)
        )
    website = {"client": "website", "status": "active", "timestamp": START, "pushable": False}
    body = await ping(env, "othello")
    assert body["presences"]["hamlet@example.com"]["website"] == website
    # Past the kept time the rows are read again.
    kept = presence_queries.PRESENCE_ANSWER_SECONDS
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", -1.0)
    body = await ping(env, "othello")
    idle = {**website, "status": "idle", "timestamp": START - 60}
    assert body["presences"]["hamlet@example.com"]["website"] == idle
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", kept)
    # This process's own changes: a deactivation, a first ping.
    await ping(env, "othello")
    assert_success(await env.client("iago").delete(f"/users/{env.users['polonius'].id}"))
    await ping(env, "shiva", "idle")
    body = await ping(env, "othello")
    assert "polonius@example.com" not in body["presences"]
    assert body["presences"]["shiva@example.com"]["website"]["status"] == "idle"
    # A write of this process for someone the rows hold is taken in place, unread.
    reads = 0
    read_rows = presence_queries._presence_rows

    async def counted(*args: Any) -> list[tuple[Any, ...]]:
        nonlocal reads
        reads += 1
        return await read_rows(*args)

    monkeypatch.setattr(presence_queries, "_presence_rows", counted)
    assert_success(await env.client("hamlet").patch("/settings", {"presence_enabled": "false"}))
    body = await ping(env, "othello")
    offline = {**idle, "timestamp": int(env.services.clock.now()) - 260}
    assert body["presences"]["hamlet@example.com"]["website"] == offline
    assert reads == 0
