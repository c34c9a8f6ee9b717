"""Bounds on event queues, on both buses: how many one user may hold, what one may hold,
and the saved queue file's permissions."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hubbub.clock import FakeClock
from hubbub.events.bus import MemoryEventBus
from hubbub.events.queues import QueueSpec, queues_to_evict
from hubbub.settings import Settings
from tests.events.verify import register
from tests.helpers import TestEnv, assert_error, assert_success, running_env, with_test_redis
from tests.messages_helpers import send_stream_message

MAX_QUEUES = 3
MAX_KIB = 8


@pytest.fixture(params=["memory", "redis"])
async def small_env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    settings = settings.with_(
        max_queues_per_user=MAX_QUEUES, max_queue_kib=MAX_KIB, heartbeat_seconds=30
    )
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings) as test_env:
        yield test_env


def test_queues_to_evict_prefers_idle_and_least_recently_used() -> None:
    owned = [("a", True, 5.0), ("b", False, 1.0), ("c", True, 2.0)]
    assert queues_to_evict(owned, 4) == []
    assert queues_to_evict(owned, 3) == ["c"]
    assert queues_to_evict(owned, 2) == ["c", "a"]
    assert queues_to_evict(owned, 1) == ["c", "a", "b"]


async def _poll(env: TestEnv, user: str, queue_id: str) -> dict[str, Any]:
    return dict(
        (await env.client(user).get("/events", {"queue_id": queue_id, "dont_block": True})).json()
    )


async def test_a_user_holds_at_most_the_limit_of_queues(small_env: TestEnv) -> None:
    env = small_env
    queues = []
    for _ in range(MAX_QUEUES + 2):
        queues.append((await register(env, env.users["hamlet"]))["queue_id"])
    bus = env.services.bus
    alive = [q for q in queues if await bus.get_queue(q) is not None]
    # The oldest two went; the newest MAX_QUEUES remain and work.
    assert alive == queues[-MAX_QUEUES:]
    for queue_id in queues[:2]:
        assert_error(
            await env.client("hamlet").get("/events", {"queue_id": queue_id, "dont_block": True}),
            f"Bad event queue ID: {queue_id}",
            code="BAD_EVENT_QUEUE_ID",
        )
    for queue_id in alive:
        assert (await _poll(env, "hamlet", queue_id))["result"] == "success"
    # Another user's queues do not count against this one's.
    other = (await register(env, env.users["othello"]))["queue_id"]
    assert await bus.get_queue(other) is not None
    assert [q for q in queues if await bus.get_queue(q) is not None] == alive


async def test_a_queue_that_holds_too_much_is_removed(small_env: TestEnv) -> None:
    env = small_env
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    idle = (await register(env, env.users["hamlet"], event_types=["message"]))["queue_id"]
    active = (await register(env, env.users["othello"], event_types=["message"]))["queue_id"]
    last_id = -1
    content = "x" * 1000
    # Far more than the bound in all, while othello's client keeps acknowledging.
    for _ in range(4 * MAX_KIB):
        await send_stream_message(env, "iago", "Denmark", content=content)
        body = assert_success(
            await env.client("othello").get(
                "/events", {"queue_id": active, "last_event_id": last_id, "dont_block": True}
            )
        )
        assert body["events"], body
        last_id = body["events"][-1]["id"]
    # hamlet never collected: his queue went once it passed the bound; he registers again.
    assert_error(
        await env.client("hamlet").get("/events", {"queue_id": idle, "dont_block": True}),
        f"Bad event queue ID: {idle}",
        code="BAD_EVENT_QUEUE_ID",
    )
    assert await env.services.bus.get_queue(active) is not None


async def test_a_queue_under_its_bound_keeps_every_event(small_env: TestEnv) -> None:
    env = small_env
    await env.subscribe("hamlet", "Denmark")
    queue_id = (await register(env, env.users["hamlet"], event_types=["message"]))["queue_id"]
    for _ in range(3):
        await send_stream_message(env, "iago", "Denmark", content="short")
    body = await _poll(env, "hamlet", queue_id)
    assert [e["id"] for e in body["events"]] == [0, 1, 2]


async def test_the_saved_queue_file_is_private(settings: Settings) -> None:
    # The shutdown file of a bus without a journal (on SQLite the queues live in the
    # database: events/durable_queues.py).
    saved = settings.data_dir / "event_queues.json"
    bus = MemoryEventBus(FakeClock(), state_file=saved)
    await bus.start()
    await bus.create_queue(QueueSpec("q", 1, 1, None), 0.0)
    await bus.close()
    assert saved.exists()
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
