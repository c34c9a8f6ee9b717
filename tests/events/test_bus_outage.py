"""A Redis outage loses no committed change's events: writes made while the bus is
unreachable are acknowledged, their events wait in the outbox, and every open queue gets
them once Redis answers again (``Services.publish_committed``). Nor does it deliver any
twice: a publish whose reply was lost is not repeated."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
from redis.asyncio.client import PubSub

from hubbub.events.bus import Notice
from hubbub.events.redis_bus import RedisEventBus
from hubbub.redis_connection import connect_redis
from hubbub.settings import Settings
from hubbub.workers.event_outbox import relay_event_outbox
from tests.events.verify import register
from tests.helpers import (
    TestEnv,
    assert_success,
    redis_url_or_skip,
    running_env,
    with_test_redis,
)
from tests.tcp_cut import CuttableRelay, cuttable_relay


@pytest.fixture
async def relay(settings: Settings) -> AsyncIterator[CuttableRelay]:
    url = urlsplit(with_test_redis(settings).redis_url)
    async with cuttable_relay(url.hostname or "127.0.0.1", url.port or 6379) as cut:
        yield cut


@pytest.fixture
async def env(settings: Settings, relay: CuttableRelay) -> AsyncIterator[TestEnv]:
    redis = with_test_redis(settings)
    url = urlsplit(redis.redis_url)
    through_relay = url._replace(netloc=f"127.0.0.1:{relay.port}").geturl()
    async with running_env(redis.with_(redis_url=through_relay)) as test_env:
        yield test_env


async def test_sends_during_an_outage_are_acknowledged_and_reach_queues_after(
    env: TestEnv, relay: CuttableRelay, caplog: pytest.LogCaptureFixture
) -> None:
    queue = await register(env, env.users["hamlet"], event_types=["message"])
    relay.cut()
    ids = []
    for n in range(3):
        body = assert_success(
            await env.client("othello").post(
                "/messages",
                {"type": "direct", "to": f"[{env.users['hamlet'].id}]", "content": f"m{n}"},
            )
        )
        ids.append(body["id"])
    # One line for the outage, not one per request.
    outage_lines = [r for r in caplog.records if "event bus unreachable" in r.getMessage()]
    assert len(outage_lines) == 1
    # Still cut: the relay takes the events and puts them back (a direct message is two
    # notices since feature level 327: the sender's and the receiver's forms).
    kept = await relay_event_outbox(env.services)
    assert kept >= 3
    relay.restore()
    assert await relay_event_outbox(env.services) == kept
    assert [
        e["message"]["id"] for e in await env.events("hamlet", queue["queue_id"], types=["message"])
    ] == ids
    assert await relay_event_outbox(env.services) == 0
    assert any("reachable again" in r.getMessage() for r in caplog.records)


@pytest.fixture
async def wake_ups(env: TestEnv) -> AsyncIterator[PubSub]:
    """A subscription of its own, straight to Redis, to the bus's wake-up messages."""
    client = connect_redis(redis_url_or_skip())
    pubsub = client.pubsub(ignore_subscribe_messages=True)
    await pubsub.subscribe(f"{env.services.settings.redis_namespace}:wake")
    try:
        yield pubsub
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]
        await client.aclose()


async def _received(pubsub: PubSub, seconds: float = 0.5) -> list[bytes]:
    """The messages the subscription gets within ``seconds``."""
    received = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (left := deadline - loop.time()) > 0:
        # None also for the confirmation of the subscription.
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
        if message is not None:
            received.append(message["data"])
    return received


async def _send(env: TestEnv, content: str) -> int:
    to = f"[{env.users['hamlet'].id}]"
    body = assert_success(
        await env.client("othello").post(
            "/messages", {"type": "direct", "to": to, "content": content}
        )
    )
    return int(body["id"])


async def test_a_publish_whose_reply_was_lost_runs_once(
    env: TestEnv, relay: CuttableRelay, wake_ups: PubSub, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis ran the publish, and the connection broke before its reply: it is neither
    sent again nor kept in the outbox to be published again."""
    queue = await register(env, env.users["hamlet"], event_types=["message"])
    relay.lose_reply_to(b"PUBLISH")
    sent = await _send(env, "once")
    assert await relay_event_outbox(env.services) == 0
    assert [
        e["message"]["id"] for e in await env.events("hamlet", queue["queue_id"], types=["message"])
    ] == [sent]
    assert await _received(wake_ups) == [queue["queue_id"].encode()]
    assert any("reply was lost" in r.getMessage() for r in caplog.records)
    assert not any("event bus unreachable" in r.getMessage() for r in caplog.records)


async def test_a_publish_redis_never_got_is_published_from_the_outbox_once(
    env: TestEnv, relay: CuttableRelay, wake_ups: PubSub, caplog: pytest.LogCaptureFixture
) -> None:
    queue = await register(env, env.users["hamlet"], event_types=["message"])
    relay.drop_request_with(b"PUBLISH")
    sent = await _send(env, "kept")
    assert await _received(wake_ups) == []
    assert any("event bus unreachable" in r.getMessage() for r in caplog.records)
    # Only that connection was dropped: the outbox's publish goes through.
    assert await relay_event_outbox(env.services) >= 1
    assert [
        e["message"]["id"] for e in await env.events("hamlet", queue["queue_id"], types=["message"])
    ] == [sent]
    assert await _received(wake_ups) == [queue["queue_id"].encode()]


async def test_a_poll_whose_wake_up_was_lost_with_the_subscription_is_answered(
    settings: Settings, relay: CuttableRelay
) -> None:
    """A wake-up published while a process's subscription is down reaches nobody; once it
    has subscribed again, its waiting polls look at their queues again instead of waiting
    for their heartbeat."""
    redis = with_test_redis(settings.with_(heartbeat_seconds=30))
    url = urlsplit(redis.redis_url)
    through_relay = url._replace(netloc=f"127.0.0.1:{relay.port}").geturl()
    async with running_env(redis.with_(redis_url=through_relay)) as env:
        hamlet = env.users["hamlet"]
        queue = await register(env, hamlet, event_types=["realm_user"])
        poll = asyncio.create_task(
            env.client("hamlet").get(
                "/events", {"queue_id": queue["queue_id"], "last_event_id": -1}
            )
        )
        await asyncio.sleep(0.3)
        assert not poll.done()
        relay.cut()
        # Another process publishes meanwhile, straight to Redis.
        client = connect_redis(redis.redis_url)
        other = RedisEventBus(client, env.services.clock, namespace=redis.redis_namespace)
        try:
            event = {
                "type": "realm_user",
                "op": "update",
                "person": {"user_id": hamlet.id, "full_name": "Hamlet II"},
            }
            await other.publish([Notice(env.realm.id, event, (hamlet.id,))])
        finally:
            await client.aclose()
        await asyncio.sleep(0.5)
        relay.restore()
        body = assert_success(await asyncio.wait_for(poll, 10))
        assert [e["type"] for e in body["events"]] == ["realm_user"]
