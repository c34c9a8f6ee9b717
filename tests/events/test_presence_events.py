"""``presence`` and ``user_status`` events: who gets them, their shapes, and that applying
them to an old /register state gives a fresh one, in the slim and the legacy form."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions import presence as presence_actions
from hubbub.actions.presence import do_presence_enabled_changed
from hubbub.clock import FakeClock
from hubbub.db.tables import user_presence
from hubbub.queries.users import active_user_ids
from hubbub.settings import Settings
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_success, running_env, with_test_redis, without_id

START = 1_700_000_000
PRESENCE_TYPES = {"event_types": ["presence"]}
# Presence events only, without presence state.
_NO_STATE: dict[str, Any] = {"event_types": ["presence"], "fetch_event_types": ["user_status"]}


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings, clock=FakeClock(START + 0.5)) as test_env:
        yield test_env


def _ping(env: TestEnv, user: str, status: str = "active") -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        resp = await env.client(user).post(
            "/users/me/presence", {"status": status, "ping_only": True}
        )
        assert_success(resp)

    return action


def _status(
    env: TestEnv, params: dict[str, Any], user: str = "hamlet"
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client(user).post("/users/me/status", params))

    return action


@pytest.mark.parametrize("slim", [True, False])
async def test_first_ping_and_coming_back_online(env: TestEnv, slim: bool) -> None:
    othello = env.users["othello"]
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env, othello, _ping(env, "hamlet"), num_events=1, slim_presence=slim
    )
    key = {"user_id": hamlet.id} if slim else {"email": hamlet.email}
    assert without_id(events[0]) == {
        "type": "presence",
        **key,
        "server_timestamp": START + 0.5,
        "presence": {
            "website": {
                "client": "website",
                "status": "active",
                "timestamp": START,
                "pushable": False,
            }
        },
    }
    # Ordinary pings a minute apart send nothing (they move the times that clients poll
    # for, so only the absence of events is checked).
    for _ in range(3):
        env.advance(60)
        await verify_action(env, othello, _ping(env, "hamlet"), num_events=0, **_NO_STATE)
    # Away for a while, then back: everyone hears at once.
    env.advance(300)
    events = await verify_action(
        env, othello, _ping(env, "hamlet"), num_events=1, slim_presence=slim
    )
    assert events[0]["presence"]["website"]["timestamp"] == START + 480
    # Idle pings never announce; coming back active after 71 s does.
    env.advance(71)
    await verify_action(env, othello, _ping(env, "hamlet", "idle"), num_events=0, **_NO_STATE)
    env.advance(10)
    await verify_action(env, othello, _ping(env, "hamlet"), num_events=1, slim_presence=slim)


@pytest.mark.parametrize("slim", [True, False])
async def test_first_ping_idle(env: TestEnv, slim: bool) -> None:
    events = await verify_action(
        env, env.users["iago"], _ping(env, "polonius", "idle"), num_events=1, slim_presence=slim
    )
    assert events[0]["presence"]["website"]["status"] == "idle"
    env.advance(200)
    await verify_action(
        env, env.users["iago"], _ping(env, "polonius"), num_events=1, slim_presence=slim
    )


@pytest.mark.parametrize("slim", [True, False])
async def test_history_limit_and_update_id_of_the_state(env: TestEnv, slim: bool) -> None:
    """``presence_history_limit_days`` (feature level 288) leaves out users not seen
    within it, and a user coming back is added by the event; ``presence_last_update_id``
    (feature level 263) moves on with the fresh state only, as no event carries it."""
    othello, hamlet = env.users["othello"], env.users["hamlet"]
    params: dict[str, Any] = {"slim_presence": slim, "presence_history_limit_days": 1}
    await _ping(env, "hamlet")()
    env.advance(3 * 24 * 3600)
    before = assert_success(await env.client(othello).post("/register", params))
    # No row fetched: -1, as in Zulip, although the realm has written id 1.
    assert (before["presences"], before["presence_last_update_id"]) == ({}, -1)
    await verify_action(env, othello, _ping(env, "hamlet"), num_events=1, **params)
    after = assert_success(await env.client(othello).post("/register", params))
    assert list(after["presences"]) == [str(hamlet.id) if slim else hamlet.email]
    assert after["presence_last_update_id"] == 2


async def test_every_active_user_hears_and_queues_get_one_key(env: TestEnv) -> None:
    slim = assert_success(
        await env.client("iago").post("/register", {"slim_presence": True, **PRESENCE_TYPES})
    )
    legacy = assert_success(await env.client("shiva").post("/register", PRESENCE_TYPES))
    await _ping(env, "hamlet")()
    for user, queue in (("iago", slim), ("shiva", legacy)):
        body = assert_success(
            await env.client(user).get(
                "/events",
                {"queue_id": queue["queue_id"], "last_event_id": -1, "dont_block": True},
            )
        )
        [event] = body["events"]
        if queue is slim:
            assert event["user_id"] == env.users["hamlet"].id and "email" not in event
        else:
            assert event["email"] == "hamlet@example.com" and "user_id" not in event


async def test_presence_disabled_realm_sends_nothing(env: TestEnv) -> None:
    async with env.services.write() as tx:
        await tx.conn.execute(
            sa.text("UPDATE realm SET settings = :s WHERE id = :id"),
            {"s": '{"presence_disabled": true}', "id": env.realm.id},
        )
    await verify_action(env, env.users["othello"], _ping(env, "hamlet"), num_events=0)


@pytest.mark.parametrize("slim", [True, False])
async def test_presence_enabled_toggle(env: TestEnv, slim: bool) -> None:
    hamlet = env.users["hamlet"]
    await _ping(env, "hamlet")()
    env.advance(30)

    async def toggle(enabled: bool) -> None:
        async with env.services.write() as tx:
            await do_presence_enabled_changed(
                tx, env.realm, hamlet, enabled, now=env.services.clock.now()
            )

    async def off() -> None:
        await toggle(False)

    async def on() -> None:
        await toggle(True)

    events = await verify_action(env, env.users["othello"], off, num_events=1, slim_presence=slim)
    assert events[0]["presence"]["website"] == {
        "client": "website",
        "status": "idle",
        "timestamp": START + 30 - 260,
        "pushable": False,
    }
    async with env.services.db.read() as conn:
        row = (await conn.execute(sa.select(user_presence.c.last_active_time))).one()
    assert row[0] is None
    env.advance(5)
    await verify_action(env, env.users["othello"], on, num_events=1, slim_presence=slim)


async def test_user_status_events(env: TestEnv) -> None:
    othello = env.users["othello"]
    hamlet_id = env.users["hamlet"].id
    events = await verify_action(
        env, othello, _status(env, {"status_text": "lunch", "emoji_name": "car"}), num_events=1
    )
    assert without_id(events[0]) == {
        "type": "user_status",
        "user_id": hamlet_id,
        "status_text": "lunch",
        "emoji_name": "car",
        "emoji_code": "1f697",
        "reaction_type": "unicode_emoji",
    }
    events = await verify_action(env, othello, _status(env, {"status_text": ""}), num_events=1)
    assert without_id(events[0]) == {
        "type": "user_status",
        "user_id": hamlet_id,
        "status_text": "",
    }
    await verify_action(env, othello, _status(env, {"emoji_name": ""}), num_events=1)
    # The same again still tells everyone (as in Zulip).
    await verify_action(env, othello, _status(env, {"emoji_name": ""}), num_events=1)
    # Only the user_status events reach a queue that asked for them alone.
    await verify_action(
        env, othello, _status(env, {"status_text": "x"}), num_events=1, event_types=["user_status"]
    )


async def test_away_sends_settings_presence_and_status(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    events = await verify_action(env, hamlet, _status(env, {"away": True, "status_text": "off"}))
    kinds = [e["type"] for e in events]
    assert kinds[0] == "user_settings" and kinds[-2:] == ["presence", "user_status"]
    assert without_id(events[-1]) == {
        "type": "user_status",
        "user_id": hamlet.id,
        "away": True,
        "status_text": "off",
    }
    env.advance(10)
    events = await verify_action(
        env, env.users["othello"], _status(env, {"away": False}), num_events=2
    )
    assert [e["type"] for e in events] == ["presence", "user_status"]
    # Fetched in the slim form too.
    env.advance(10)
    await verify_action(
        env, env.users["othello"], _status(env, {"away": True}), num_events=2, slim_presence=True
    )


async def test_only_a_realm_within_the_limit_hears_presence(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Zulip sends presence events only in realms of at most
    USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS active users; the check reads only the
    first ids it needs, and a realm at the limit still reaches every user."""
    async with env.services.db.read() as conn:
        ids = await active_user_ids(conn, env.realm.id)
    by_id = {u.id: u for u in env.users.values()}
    first = by_id[min(i for i in ids if i != env.users["hamlet"].id)]
    last = by_id[max(ids)]
    limit = "USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS"
    monkeypatch.setattr(presence_actions, limit, len(ids) - 1)
    # One user too many: nobody hears, not even the first ids read for the check.
    await verify_action(env, first, _ping(env, "hamlet"), num_events=0, **_NO_STATE)
    await verify_action(env, last, _ping(env, "hamlet"), num_events=0, **_NO_STATE)
    env.advance(300)  # away, so that the next ping is news again
    monkeypatch.setattr(presence_actions, limit, len(ids))
    events = await verify_action(env, last, _ping(env, "hamlet"), num_events=1)
    assert events[0]["email"] == env.users["hamlet"].email
