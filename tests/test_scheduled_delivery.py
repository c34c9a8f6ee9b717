"""Delivering scheduled messages: on time, as the sender, exactly once across workers and
restarts, and kept as failed (with Zulip's reason) when they can no longer be sent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions.scheduled_message_delivery import deliver_one_due_scheduled_message
from hubbub.clock import FakeClock
from hubbub.db.tables import message, scheduled_message
from hubbub.services import Services, build_services
from hubbub.settings import Settings
from hubbub.workers import scheduled_delivery
from hubbub.workers.scheduled_delivery import (
    deliver_due_scheduled_messages,
    delivery_realm_url,
    run_scheduled_delivery,
)
from tests.helpers import TestEnv, assert_success, running_env
from tests.messages_helpers import message_flags

NOW = 1_700_000_000
READ = 1


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(float(NOW))) as test_env:
        yield test_env


async def _schedule(env: TestEnv, user: str = "hamlet", **params: Any) -> int:
    body = assert_success(await env.client(user).post("/scheduled_messages", params))
    return int(body["scheduled_message_id"])


async def _stream_message(env: TestEnv, stream_id: int, at: int, content: str = "hi") -> int:
    return await _schedule(
        env,
        type="stream",
        to=stream_id,
        topic="t",
        content=content,
        scheduled_delivery_timestamp=at,
    )


async def _row(services: Services, scheduled_id: int) -> Any:
    async with services.db.read() as conn:
        return (
            await conn.execute(
                sa.select(scheduled_message).where(scheduled_message.c.id == scheduled_id)
            )
        ).one()


async def _messages(services: Services) -> list[Any]:
    async with services.db.read() as conn:
        return list(await conn.execute(sa.select(message).order_by(message.c.id)))


async def test_sent_at_the_due_time_as_the_sender(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    sid = await _stream_message(env, denmark.id, NOW + 60, "**on time** @**Othello**")
    env.advance(59)
    assert await deliver_due_scheduled_messages(env.services) == 0
    assert await _messages(env.services) == []
    env.advance(1)
    assert await deliver_due_scheduled_messages(env.services) == 1
    (sent,) = await _messages(env.services)
    hamlet = env.users["hamlet"]
    assert (sent.sender_id, sent.topic, sent.content, sent.date_sent) == (
        hamlet.id,
        "t",
        "**on time** @**Othello**",
        NOW + 60,
    )
    assert sent.sending_client == "HubbubTests"
    row = await _row(env.services, sid)
    assert (row.delivered, row.delivered_message_id, row.failed) == (True, sent.id, False)
    # Re-rendered at delivery, with mention flags as for any message.
    flags = await message_flags(env, sent.id)
    assert flags[env.users["othello"].id] & 8  # mentioned
    # Delivered messages leave the list and are not sent again.
    assert (
        assert_success(await env.client("hamlet").get("/scheduled_messages"))["scheduled_messages"]
        == []
    )
    env.advance(3600)
    assert await deliver_due_scheduled_messages(env.services) == 0
    assert len(await _messages(env.services)) == 1


async def test_direct_messages_and_read_by_sender(env: TestEnv) -> None:
    hamlet, othello, iago = env.users["hamlet"], env.users["othello"], env.users["iago"]
    mobile = env.client("hamlet", headers={"User-Agent": "ZulipMobile/27.0"})

    async def schedule(to: list[int], **extra: Any) -> int:
        params = {
            "type": "direct",
            "to": to,
            "content": "dm",
            "scheduled_delivery_timestamp": NOW + 5,
        }
        body = assert_success(await mobile.post("/scheduled_messages", {**params, **extra}))
        return int(body["scheduled_message_id"])

    group = await schedule([othello.id, iago.id])
    to_self = await schedule([hamlet.id])
    explicit = await schedule([othello.id], read_by_sender=False)
    env.advance(5)
    assert await deliver_due_scheduled_messages(env.services) == 3
    delivered = {
        sid: (await _row(env.services, sid)).delivered_message_id
        for sid in (group, to_self, explicit)
    }
    group_flags = await message_flags(env, delivered[group])
    assert set(group_flags) == {hamlet.id, othello.id, iago.id}
    assert group_flags[hamlet.id] & READ and not group_flags[othello.id] & READ
    # A note to self starts unread; read_by_sender=false is kept.
    assert not (await message_flags(env, delivered[to_self]))[hamlet.id] & READ
    assert not (await message_flags(env, delivered[explicit]))[hamlet.id] & READ
    sent = await _messages(env.services)
    assert {m.sending_client for m in sent} == {"ZulipMobile"}


async def _assert_failed(env: TestEnv, sid: int, reason: str) -> None:
    row = await _row(env.services, sid)
    assert (row.delivered, row.failed, row.failure_message) == (False, True, reason)
    assert row.delivered_message_id is None


async def test_failures_are_kept_with_their_reason(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    announce = await env.subscribe("hamlet", "announce")
    othello = env.users["othello"]
    archived = await _stream_message(env, denmark.id, NOW + 10)
    restricted = await _stream_message(env, announce.id, NOW + 10)
    gone = await _schedule(
        env, type="direct", to=[othello.id], content="x", scheduled_delivery_timestamp=NOW + 10
    )
    assert_success(await env.client("iago").delete(f"/streams/{denmark.id}"))
    assert_success(
        await env.client("iago").patch(f"/streams/{announce.id}", {"stream_post_policy": 2})
    )
    assert_success(await env.client("iago").delete(f"/users/{othello.id}"))
    env.advance(10)
    assert await deliver_due_scheduled_messages(env.services) == 3
    # An archived stream refuses messages as Zulip 10.2 does.
    await _assert_failed(env, archived, "Not authorized to send to channel 'Denmark'")
    await _assert_failed(env, restricted, "You do not have permission to post in this channel.")
    await _assert_failed(env, gone, "'othello@example.com' is no longer using Zulip.")
    assert await _messages(env.services) == []
    # Failed messages stay listed, and are not retried by themselves.
    items = assert_success(await env.client("hamlet").get("/scheduled_messages"))
    assert [i["failed"] for i in items["scheduled_messages"]] == [True, True, True]
    assert await deliver_due_scheduled_messages(env.services) == 0


async def test_sender_deactivated_and_too_late(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    late = await _stream_message(env, denmark.id, NOW + 10)
    on_time = await _stream_message(env, denmark.id, NOW + 700)
    othellos = await _schedule(
        env,
        "othello",
        type="stream",
        to=denmark.id,
        topic="t",
        content="x",
        scheduled_delivery_timestamp=NOW + 700,
    )
    # The server was down: more than Zulip's 10 minutes late is not sent.
    env.advance(10 + 601)
    assert await deliver_due_scheduled_messages(env.services) == 1
    await _assert_failed(env, late, "Message could not be sent at the scheduled time.")
    assert_success(await env.client("iago").delete(f"/users/{env.users['othello'].id}"))
    env.advance(100)
    assert await deliver_due_scheduled_messages(env.services) == 2
    await _assert_failed(env, othellos, "Account is deactivated")
    assert (await _row(env.services, on_time)).delivered is True


async def test_two_workers_deliver_each_message_exactly_once(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    ids = [await _stream_message(env, denmark.id, NOW + 1 + i % 3, f"m{i}") for i in range(24)]
    env.advance(10)
    # A second worker process: its own Services (engine, pool, bus) on the same database.
    other = build_services(env.services.settings, clock=env.services.clock)
    await other.start()
    try:
        counts = await asyncio.gather(
            deliver_due_scheduled_messages(env.services), deliver_due_scheduled_messages(other)
        )
    finally:
        await other.close()
    assert sum(counts) == len(ids)
    sent = await _messages(env.services)
    assert sorted(m.content for m in sent) == sorted(f"m{i}" for i in range(24))
    rows = [await _row(env.services, sid) for sid in ids]
    assert all(r.delivered and not r.failed for r in rows)
    assert sorted(r.delivered_message_id for r in rows) == [m.id for m in sent]


async def test_a_claimed_message_is_not_taken_by_another_worker(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    sid = await _stream_message(env, denmark.id, NOW + 1)
    env.advance(1)
    other = build_services(env.services.settings, clock=env.services.clock)
    await other.start()
    try:
        async with env.services.write() as tx:
            claimed = await deliver_one_due_scheduled_message(
                tx,
                now=NOW + 1,
                realm_url=lambda realm: delivery_realm_url(env.services.settings, realm),
            )
            assert claimed == sid
            # PostgreSQL: the row is locked, so the other worker skips it at once.
            # SQLite: the other worker waits for the single writer, then finds it sent.
            rival = asyncio.create_task(deliver_due_scheduled_messages(other))
            await asyncio.sleep(0.2)
        assert await rival == 0
    finally:
        await other.close()
    assert len(await _messages(env.services)) == 1


class _Crash(Exception):
    pass


async def test_a_restart_while_due_sends_it_once(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    sid = await _stream_message(env, denmark.id, NOW + 60, "survives")
    env.advance(120)
    # The process dies after sending but before its transaction commits: nothing is kept.
    with pytest.raises(_Crash):
        async with env.services.write() as tx:
            await deliver_one_due_scheduled_message(
                tx, now=NOW + 120, realm_url=lambda realm: "http://localhost"
            )
            raise _Crash()
    assert await _messages(env.services) == []
    assert (await _row(env.services, sid)).delivered is False
    # The restarted process (new Services) sends it, once.
    restarted = build_services(env.services.settings, clock=env.services.clock)
    await restarted.start()
    try:
        assert await deliver_due_scheduled_messages(restarted) == 1
        assert await deliver_due_scheduled_messages(restarted) == 0
    finally:
        await restarted.close()
    assert await deliver_due_scheduled_messages(env.services) == 0
    (sent,) = await _messages(env.services)
    assert sent.content == "survives"
    assert (await _row(env.services, sid)).delivered_message_id == sent.id


async def test_the_loop_wakes_for_a_sooner_message(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real time: the loop is what is under test. Without the wake-up it would sleep 30 s.
    monkeypatch.setattr(scheduled_delivery, "MAX_SLEEP_SECONDS", 30.0)
    async with running_env(settings) as env:
        denmark = await env.subscribe("hamlet", "Denmark")
        loop = asyncio.create_task(run_scheduled_delivery(env.services))
        try:
            await asyncio.sleep(0.2)  # the loop is asleep now, for up to 30 s
            # Whole seconds: +1 could be a few milliseconds away, and the request late.
            due = int(time.time()) + 2
            sid = await _stream_message(env, denmark.id, due)
            # Well short of the 30 s sleep, and generous for a busy machine.
            deadline = time.monotonic() + 15
            while not (await _row(env.services, sid)).delivered:
                assert time.monotonic() < deadline, "the loop did not wake for the message"
                await asyncio.sleep(0.05)
        finally:
            loop.cancel()
            await asyncio.gather(loop, return_exceptions=True)
        (sent,) = await _messages(env.services)
        # Never early; how soon after the due time is measured by bench/scheduled.py.
        assert due <= sent.date_sent


async def test_a_transient_failure_leaves_the_message_due_for_the_next_pass(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send that loses a race on a unique index (or meets an outage) is not recorded as
    failed: the pass fails, and the next one delivers the message once."""
    from sqlalchemy.exc import IntegrityError

    from hubbub.actions import scheduled_message_delivery as delivery
    from hubbub.actions.send_message import check_send_message

    denmark = await env.subscribe("hamlet", "Denmark")
    sid = await _stream_message(env, denmark.id, NOW + 60)
    real_send = check_send_message
    calls = 0

    async def lose_a_race_once(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed: user_topic"))
        return await real_send(*args, **kwargs)

    monkeypatch.setattr(delivery, "check_send_message", lose_a_race_once)
    env.advance(60)
    with pytest.raises(IntegrityError):
        await deliver_due_scheduled_messages(env.services)
    row = await _row(env.services, sid)
    assert (row.delivered, row.failed) == (False, False)
    assert await deliver_due_scheduled_messages(env.services) == 1
    (sent,) = await _messages(env.services)
    row = await _row(env.services, sid)
    assert (row.delivered, row.delivered_message_id, row.failed) == (True, sent.id, False)
