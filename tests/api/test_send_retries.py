"""Retried sends: a ``POST /messages`` repeated with the same ``queue_id`` and
``local_id`` returns the first message's id and posts nothing new."""

from __future__ import annotations

import asyncio

import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import message, send_key
from hubbub.workers.periodic import prune_send_keys
from tests.helpers import TestEnv, assert_success, running_env
from tests.messages_helpers import send_stream_message


async def _count(env: TestEnv) -> int:
    async with env.services.db.read() as conn:
        return int(
            (await conn.execute(sa.select(sa.func.count()).select_from(message))).scalar_one()
        )


async def _send(env: TestEnv, user: str, **keys: str) -> int:
    return await send_stream_message(env, user, "retries", content="once only", **keys)


async def test_a_repeat_returns_the_first_message(env: TestEnv) -> None:
    await env.subscribe("hamlet", "retries")
    await env.subscribe("othello", "retries")
    before = await _count(env)
    first = await _send(env, "hamlet", queue_id="q1", local_id="1.01")
    assert await _send(env, "hamlet", queue_id="q1", local_id="1.01") == first
    assert await _count(env) == before + 1
    # Another local id, another queue, another sender: new messages.
    assert await _send(env, "hamlet", queue_id="q1", local_id="1.02") != first
    assert await _send(env, "hamlet", queue_id="q2", local_id="1.01") != first
    assert await _send(env, "othello", queue_id="q1", local_id="1.01") != first
    # Without both keys every request is a new message, as in Zulip.
    plain = [await _send(env, "hamlet") for _ in range(2)]
    assert plain[0] != plain[1]
    assert await _send(env, "hamlet", local_id="1.01") != await _send(
        env, "hamlet", local_id="1.01"
    )
    assert await _count(env) == before + 8


async def test_concurrent_copies_make_one_message(env: TestEnv) -> None:
    await env.subscribe("hamlet", "retries")
    before = await _count(env)
    ids = await asyncio.gather(
        *(_send(env, "hamlet", queue_id="q9", local_id="7") for _ in range(4))
    )
    assert len(set(ids)) == 1
    assert await _count(env) == before + 1


async def test_a_deleted_message_frees_its_key(env: TestEnv) -> None:
    await env.subscribe("iago", "retries")
    first = await _send(env, "iago", queue_id="q", local_id="1")
    assert_success(await env.client("iago").delete(f"/messages/{first}"))
    again = await _send(env, "iago", queue_id="q", local_id="1")
    assert again != first


async def test_long_keys_are_not_remembered(env: TestEnv) -> None:
    await env.subscribe("hamlet", "retries")
    long_id = "x" * 65
    a = await _send(env, "hamlet", queue_id="q", local_id=long_id)
    assert await _send(env, "hamlet", queue_id="q", local_id=long_id) != a


async def test_keys_are_pruned_after_a_day(settings: object) -> None:
    clock = FakeClock()
    async with running_env(settings, clock=clock) as env:  # type: ignore[arg-type]
        await env.subscribe("hamlet", "retries")
        first = await _send(env, "hamlet", queue_id="q", local_id="1")
        clock.advance(3600)
        assert await prune_send_keys(env.services) == 0
        clock.advance(24 * 3600)
        assert await prune_send_keys(env.services) == 1
        async with env.services.db.read() as conn:
            rows = (await conn.execute(sa.select(sa.func.count()).select_from(send_key))).scalar()
        assert rows == 0
        assert await _send(env, "hamlet", queue_id="q", local_id="1") != first
