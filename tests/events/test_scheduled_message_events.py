"""``scheduled_messages`` events (add, update, remove) and the /register state they keep
current, through scheduling, editing, deleting, delivery and failed delivery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from hubbub.clock import FakeClock
from hubbub.settings import Settings
from hubbub.workers.scheduled_delivery import deliver_due_scheduled_messages
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_success, running_env, with_test_redis

NOW = 1_700_000_000


@pytest.fixture(params=["memory", "redis"])
async def env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    # The events travel on both buses, including those a delivery publishes.
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings, clock=FakeClock(float(NOW))) as test_env:
        yield test_env


async def _schedule(env: TestEnv, stream_id: int, at: int, content: str = "hi") -> int:
    params = {
        "type": "stream",
        "to": stream_id,
        "topic": "t",
        "content": content,
        "scheduled_delivery_timestamp": at,
    }
    body = assert_success(await env.client("hamlet").post("/scheduled_messages", params))
    return int(body["scheduled_message_id"])


async def test_add_update_remove(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    later = await _schedule(env, denmark.id, NOW + 500)
    created: list[int] = []

    async def add() -> None:
        created.append(await _schedule(env, denmark.id, NOW + 100, "**soon**"))

    events = await verify_action(env, hamlet, add, num_events=1, event_types=["scheduled_messages"])
    assert events[0] == {
        "id": events[0]["id"],
        "type": "scheduled_messages",
        "op": "add",
        "scheduled_messages": [
            {
                "scheduled_message_id": created[0],
                "type": "stream",
                "to": denmark.id,
                "topic": "t",
                "content": "**soon**",
                "rendered_content": "<p><strong>soon</strong></p>",
                "scheduled_delivery_timestamp": NOW + 100,
                "failed": False,
            }
        ],
    }
    state = await register(env, hamlet, event_types=["scheduled_messages"])
    assert [i["scheduled_message_id"] for i in state["scheduled_messages"]] == [created[0], later]

    async def move_later() -> None:
        assert_success(
            await env.client("hamlet").patch(
                f"/scheduled_messages/{created[0]}",
                {"scheduled_delivery_timestamp": NOW + 900, "content": "edited"},
            )
        )

    events = await verify_action(
        env, hamlet, move_later, num_events=1, event_types=["scheduled_messages"]
    )
    update = events[0]
    assert (update["op"], update["scheduled_message"]["content"]) == ("update", "edited")
    assert update["scheduled_message"]["scheduled_delivery_timestamp"] == NOW + 900

    async def delete() -> None:
        assert_success(await env.client("hamlet").delete(f"/scheduled_messages/{later}"))

    events = await verify_action(env, hamlet, delete, num_events=1)
    assert events[0]["op"] == "remove" and events[0]["scheduled_message_id"] == later


async def test_only_the_sender_hears(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")

    async def add() -> None:
        await _schedule(env, denmark.id, NOW + 100)

    await verify_action(env, env.users["othello"], add, num_events=0)


async def test_delivery_sends_the_message_and_removes_it(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    sid = await _schedule(env, denmark.id, NOW + 60, "scheduled hello")
    env.advance(60)

    async def deliver() -> None:
        assert await deliver_due_scheduled_messages(env.services) == 1

    events = await verify_action(env, env.users["hamlet"], deliver)
    # Sending to a new topic also makes the sender follow it (user_topic events between).
    kinds = [e["type"] for e in events]
    assert (kinds[0], kinds[-1], kinds.count("scheduled_messages")) == (
        "message",
        "scheduled_messages",
        1,
    )
    assert events[0]["message"]["content"] == "scheduled hello"  # apply_markdown off
    assert events[0]["message"]["sender_id"] == env.users["hamlet"].id
    assert events[-1] == {
        "id": events[-1]["id"],
        "type": "scheduled_messages",
        "op": "remove",
        "scheduled_message_id": sid,
    }


async def test_failed_delivery_is_an_update(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    sid = await _schedule(env, denmark.id, NOW + 60)
    assert_success(await env.client("iago").delete(f"/streams/{denmark.id}"))
    env.advance(61)

    async def deliver() -> None:
        assert await deliver_due_scheduled_messages(env.services) == 1

    events = await verify_action(
        env, env.users["hamlet"], deliver, num_events=1, event_types=["scheduled_messages"]
    )
    changed: dict[str, Any] = events[0]["scheduled_message"]
    assert (events[0]["op"], changed["scheduled_message_id"], changed["failed"]) == (
        "update",
        sid,
        True,
    )

    async def rearm() -> None:
        assert_success(
            await env.client("hamlet").patch(
                f"/scheduled_messages/{sid}", {"scheduled_delivery_timestamp": NOW + 600}
            )
        )

    events = await verify_action(
        env, env.users["hamlet"], rearm, num_events=1, event_types=["scheduled_messages"]
    )
    assert events[0]["scheduled_message"]["failed"] is False
