"""A Redis outage loses no committed change's events: writes made while the bus is
unreachable are acknowledged, their events wait in the outbox, and every open queue gets
them once Redis answers again (``Services.publish_committed``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from hubbub.settings import Settings
from hubbub.workers.event_outbox import relay_event_outbox
from tests.events.verify import register
from tests.helpers import TestEnv, assert_success, running_env, with_test_redis
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
