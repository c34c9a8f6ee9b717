"""Message retention (``workers/retention.py``): which messages expire under the realm's and
the streams' ``message_retention_days``, that they go in batches with everything hanging
off them, and that clients hear of it through ``delete_message`` events. Time is a
``FakeClock`` moved by hand; every test runs on each database and on both event buses."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import sqlalchemy as sa

from hubbub.actions.retention import SECONDS_PER_DAY, get_expiry_boundary
from hubbub.clock import FakeClock
from hubbub.db.tables import message, reaction, submessage, user_message
from hubbub.settings import Settings
from hubbub.workers import retention
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success, running_env, with_test_redis
from tests.messages_helpers import send_direct_message, send_stream_message

DAY = SECONDS_PER_DAY
BULK: dict[str, Any] = {"client_capabilities": {"bulk_message_deletion": True}}


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


async def _set_stream_retention(env: TestEnv, stream_id: int, value: object) -> None:
    params = {"message_retention_days": orjson.dumps(value).decode()}
    assert_success(await env.client("desdemona").patch(f"/streams/{stream_id}", params))


async def _existing(env: TestEnv) -> list[int]:
    async with env.services.db.read() as conn:
        return [int(i) for (i,) in await conn.execute(sa.select(message.c.id).order_by("id"))]


async def _count(env: TestEnv, table: sa.Table, ids: list[int]) -> int:
    async with env.services.db.read() as conn:
        query = sa.select(sa.func.count()).select_from(table).where(table.c.message_id.in_(ids))
        return int((await conn.execute(query)).scalar_one())


async def test_nothing_to_do(env: TestEnv) -> None:
    # Unlimited everywhere (the default), and an empty database.
    assert await retention.run_once(env.services) == 0
    await env.subscribe("hamlet", "Denmark")
    kept = await send_stream_message(env, "hamlet", "Denmark")
    env.advance(3650 * DAY)
    assert await retention.run_once(env.services) == 0
    assert await _existing(env) == [kept]


async def test_realm_retention_keeps_a_message_just_inside_the_limit(env: TestEnv) -> None:
    await env.set_realm(message_retention_days=30)
    await env.subscribe("hamlet", "Denmark")
    old_stream = await send_stream_message(env, "hamlet", "Denmark", "old")
    old_direct = await send_direct_message(env, "hamlet", ["othello"], "old")
    env.advance(1)
    newer = await send_stream_message(env, "hamlet", "Denmark", "newer")
    # Exactly 30 days: not yet strictly older than the period.
    env.advance(30 * DAY - 1)
    assert await retention.run_once(env.services) == 0
    assert await _existing(env) == [old_stream, old_direct, newer]
    # One second later the first two have expired; the newer one is just inside.
    env.advance(1)
    assert await retention.run_once(env.services) == 2
    assert await _existing(env) == [newer]
    env.advance(1)
    assert await retention.run_once(env.services) == 1
    assert await _existing(env) == []


async def test_stream_override_in_an_unlimited_realm(env: TestEnv) -> None:
    short = await env.subscribe("hamlet", "Short")
    await env.subscribe("hamlet", "Default")
    await _set_stream_retention(env, short.id, 10)
    expiring = await send_stream_message(env, "hamlet", "Short")
    following_realm = await send_stream_message(env, "hamlet", "Default")
    direct = await send_direct_message(env, "hamlet", ["othello"])
    env.advance(11 * DAY)
    assert await retention.run_once(env.services) == 1
    assert expiring not in await _existing(env)
    # The realm keeps everything, so do its other streams and its direct messages.
    assert await _existing(env) == [following_realm, direct]


async def test_stream_values_beside_a_limited_realm(env: TestEnv) -> None:
    await env.set_realm(message_retention_days=5)
    forever = await env.subscribe("hamlet", "Forever")
    longer = await env.subscribe("hamlet", "Longer")
    back = await env.subscribe("hamlet", "Back")
    await env.subscribe("hamlet", "Default")
    await _set_stream_retention(env, forever.id, "unlimited")
    await _set_stream_retention(env, longer.id, 20)
    await _set_stream_retention(env, back.id, 100)
    # "realm_default" puts a stream back under the realm's period.
    await _set_stream_retention(env, back.id, "realm_default")
    kept_forever = await send_stream_message(env, "hamlet", "Forever")
    kept_longer = await send_stream_message(env, "hamlet", "Longer")
    gone_back = await send_stream_message(env, "hamlet", "Back")
    gone_default = await send_stream_message(env, "hamlet", "Default")

    env.advance(6 * DAY)
    assert await retention.run_once(env.services) == 2
    remaining = await _existing(env)
    assert remaining == [kept_forever, kept_longer]
    assert gone_back not in remaining and gone_default not in remaining

    env.advance(15 * DAY)
    assert await retention.run_once(env.services) == 1
    assert await _existing(env) == [kept_forever]
    env.advance(10_000 * DAY)
    assert await retention.run_once(env.services) == 0
    assert await _existing(env) == [kept_forever]


async def test_direct_messages_follow_the_realm(env: TestEnv) -> None:
    # A stream with a short period changes nothing for direct messages.
    short = await env.subscribe("hamlet", "Short")
    await _set_stream_retention(env, short.id, 1)
    one_to_one = await send_direct_message(env, "hamlet", ["othello"])
    to_self = await send_direct_message(env, "hamlet", ["hamlet"])
    group = await send_direct_message(env, "hamlet", ["othello", "iago"])
    env.advance(400 * DAY)
    assert await retention.run_once(env.services) == 0
    assert await _existing(env) == [one_to_one, to_self, group]

    await env.set_realm(message_retention_days=365)
    assert await retention.run_once(env.services) == 3
    assert await _existing(env) == []


async def test_other_realms_keep_their_messages(env: TestEnv) -> None:
    await env.set_realm(message_retention_days=1)
    other = await env.create_realm("other", "Other")
    lear = await env.create_user("lear@other.example.com", "Lear", realm=other)
    body = await env.client(lear, host="other.localhost").post(
        "/messages", {"type": "direct", "to": f"[{lear.id}]", "content": "mine"}
    )
    theirs = int(assert_success(body)["id"])
    ours = await send_direct_message(env, "hamlet", ["othello"])
    env.advance(2 * DAY)
    assert await retention.run_once(env.services) == 1
    assert ours not in await _existing(env)
    assert await _existing(env) == [theirs]


async def test_batches_and_their_events(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    await _set_stream_retention(env, denmark.id, 2)
    doomed = [await send_stream_message(env, "hamlet", "Denmark", f"m{n}") for n in range(5)]
    env.advance(1)
    survivor = await send_stream_message(env, "hamlet", "Denmark", "late")
    bulk = await register(env, env.users["othello"], **BULK)
    single = await register(env, env.users["othello"])

    env.advance(2 * DAY)
    assert await retention.run_once(env.services, batch_size=2) == 5
    assert await _existing(env) == [survivor]
    # One transaction (and one event) per batch of two, oldest first.
    events = await env.events("othello", bulk, types=["delete_message"])
    assert [e["message_ids"] for e in events] == [doomed[0:2], doomed[2:4], doomed[4:5]]
    for event in events:
        assert (event["message_type"], event["stream_id"], event["topic"]) == (
            "stream",
            denmark.id,
            "test",
        )
    # Queues without bulk_message_deletion get one event per message.
    assert [
        e["message_id"] for e in await env.events("othello", single, types=["delete_message"])
    ] == doomed


async def test_events_bring_register_state_up_to_date(env: TestEnv) -> None:
    await env.set_realm(message_retention_days=3)
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    await send_stream_message(env, "hamlet", "Denmark", "unread for othello")
    await send_direct_message(env, "hamlet", ["othello"], "a direct one")
    await send_direct_message(env, "hamlet", ["othello", "iago"], "a group one")
    env.advance(1)
    # Each conversation keeps a newer (unread) message: the state's fallback for a deleted
    # newest message is then exact (see register/message_delete_state.py).
    kept = [
        await send_stream_message(env, "hamlet", "Denmark", "kept"),
        await send_direct_message(env, "hamlet", ["othello"], "kept"),
        await send_direct_message(env, "hamlet", ["othello", "iago"], "kept"),
    ]

    async def expire() -> None:
        env.advance(3 * DAY)
        assert await retention.run_once(env.services) == 3

    # Unread counts, recent conversations and max_message_id all follow the events.
    events = await verify_action(env, env.users["othello"], expire, num_events=3, **BULK)
    assert sorted(e["message_type"] for e in events) == ["private", "private", "stream"]
    assert await _existing(env) == kept


async def test_rows_reactions_submessages_and_history_go(env: TestEnv) -> None:
    await env.set_realm(message_retention_days=1)
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    doomed = await send_stream_message(env, "hamlet", "Denmark", "/poll Lunch?")
    client = env.client("othello")
    assert_success(await client.post(f"/messages/{doomed}/reactions", {"emoji_name": "smile"}))
    # The sender's client attaches the widget first, as the web app does for "/poll".
    poll = {"widget_type": "poll", "extra_data": {"question": "Lunch?", "options": ["pizza"]}}
    assert_success(
        await env.client("hamlet").post(
            "/submessage",
            {"message_id": doomed, "msg_type": "widget", "content": orjson.dumps(poll).decode()},
        )
    )
    assert_success(await env.client("hamlet").patch(f"/messages/{doomed}", {"topic": "Renamed"}))
    async with env.services.db.read() as conn:
        history = (
            await conn.execute(sa.select(message.c.edit_history).where(message.c.id == doomed))
        ).scalar_one()
    assert history is not None
    env.advance(1)
    kept = await send_stream_message(env, "hamlet", "Denmark", "kept")
    assert_success(await client.post(f"/messages/{kept}/reactions", {"emoji_name": "smile"}))
    for table in (user_message, reaction, submessage):
        assert await _count(env, table, [doomed]) > 0

    env.advance(DAY)
    assert await retention.run_once(env.services) == 1
    assert await _existing(env) == [kept]
    for table in (user_message, reaction, submessage):
        assert await _count(env, table, [doomed]) == 0
    assert await _count(env, user_message, [kept]) == 2
    assert await _count(env, reaction, [kept]) == 1
    # A client asking for the message now finds nothing.
    response = await env.client("othello").get(f"/messages/{doomed}")
    assert response.json()["msg"] == "Invalid message(s)"


async def test_expiry_boundary_skips_gaps(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    sent: list[tuple[int, float]] = []
    for n in range(9):
        sent.append((await send_stream_message(env, "hamlet", "Denmark", f"m{n}"), _now(env)))
        env.advance(10)
    # Gaps in the ids, where messages were deleted, must not mislead the search.
    for message_id, _ in sent[2:5]:
        assert_success(await env.client("iago").delete(f"/messages/{message_id}"))
    async with env.services.db.read() as conn:
        assert await get_expiry_boundary(conn, sent[0][1]) == sent[0][0] - 1
        assert await get_expiry_boundary(conn, sent[0][1] + 1) == sent[0][0]
        # Just past a deleted stretch: the newest expired id is the last one before it.
        assert await get_expiry_boundary(conn, sent[5][1]) == sent[5][0] - 1
        assert await get_expiry_boundary(conn, sent[3][1] + 1) == sent[4][0]
        assert await get_expiry_boundary(conn, sent[8][1] + 1) == sent[8][0]


def _now(env: TestEnv) -> float:
    return env.services.clock.now()


async def test_concurrent_runs_delete_and_announce_each_message_once(env: TestEnv) -> None:
    # Every worker process runs the job; on PostgreSQL each batch claims its rows (SKIP
    # LOCKED), so two runs at once never delete or announce a message twice.
    denmark = await env.subscribe("hamlet", "Denmark")
    await _set_stream_retention(env, denmark.id, 1)
    doomed = [await send_stream_message(env, "hamlet", "Denmark", f"m{n}") for n in range(12)]
    state = await register(env, env.users["hamlet"], **BULK)
    env.advance(2 * DAY)
    counts = await asyncio.gather(
        retention.run_once(env.services, batch_size=3),
        retention.run_once(env.services, batch_size=3),
    )
    assert sum(counts) == len(doomed)
    assert await _existing(env) == []
    announced = [
        i
        for e in await env.events("hamlet", state, types=["delete_message"])
        for i in e["message_ids"]
    ]
    assert sorted(announced) == doomed
