"""``user_topic`` and legacy ``muted_topics`` events: applying them to old state gives the
new state, for queues that want both, only one, or neither."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hubbub.models import Stream
from tests.events.verify import verify_action
from tests.helpers import TestEnv, assert_success, without_id

MUTED_TOPICS = "/users/me/subscriptions/muted_topics"


def _set(
    env: TestEnv, stream: Stream, topic: str, policy: int, user: str = "hamlet"
) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(
            await env.client(user).post(
                "/user_topics",
                {"stream_id": stream.id, "topic": topic, "visibility_policy": policy},
            )
        )

    return action


def _legacy(env: TestEnv, params: dict[str, Any]) -> Callable[[], Awaitable[None]]:
    async def action() -> None:
        assert_success(await env.client("hamlet").patch(MUTED_TOPICS, params))

    return action


async def test_mute_sends_muted_topics_then_user_topic(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    events = await verify_action(env, hamlet, _set(env, denmark, "Lunch", 1), num_events=2)
    now = int(env.services.clock.now())
    assert [without_id(e) for e in events] == [
        {"type": "muted_topics", "muted_topics": [["Denmark", "Lunch", events[1]["last_updated"]]]},
        {
            "type": "user_topic",
            "stream_id": denmark.id,
            "topic_name": "Lunch",
            "last_updated": events[1]["last_updated"],
            "visibility_policy": 1,
        },
    ]
    assert abs(events[1]["last_updated"] - now) <= 2
    # Nobody else hears of it.
    await verify_action(env, env.users["othello"], _set(env, denmark, "dinner", 1), num_events=0)


async def test_every_policy_change(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    await verify_action(env, hamlet, _set(env, denmark, "lunch", 1), num_events=2)
    for policy in (3, 2, 1, 0):
        events = await verify_action(env, hamlet, _set(env, denmark, "lunch", policy), num_events=2)
        assert events[1]["visibility_policy"] == policy
        # The legacy list holds muted topics only.
        expected = [["Denmark", "lunch", events[1]["last_updated"]]] if policy == 1 else []
        assert events[0]["muted_topics"] == expected


async def test_no_change_sends_nothing(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    await verify_action(env, hamlet, _set(env, denmark, "lunch", 3), num_events=2)
    await verify_action(env, hamlet, _set(env, denmark, "lunch", 3), num_events=0)
    await verify_action(env, hamlet, _set(env, denmark, "never set", 0), num_events=0)
    await verify_action(
        env,
        hamlet,
        _legacy(env, {"stream": "Denmark", "topic": "never set", "op": "remove"}),
        num_events=0,
    )


async def test_case_change_renames(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    await verify_action(env, hamlet, _set(env, denmark, "lunch", 1), num_events=2)
    # Same policy, new case: the stored name follows, and clients are told.
    events = await verify_action(env, hamlet, _set(env, denmark, "LUNCH", 1), num_events=2)
    assert events[0]["muted_topics"] == [["Denmark", "LUNCH", events[1]["last_updated"]]]
    assert events[1]["topic_name"] == "LUNCH"
    events = await verify_action(env, hamlet, _set(env, denmark, "Lunch", 3), num_events=2)
    assert events[0]["muted_topics"] == []
    assert (events[1]["topic_name"], events[1]["visibility_policy"]) == ("Lunch", 3)


async def test_queue_event_types(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env, hamlet, _set(env, denmark, "lunch", 1), num_events=1, event_types=["user_topic"]
    )
    assert events[0]["type"] == "user_topic"
    events = await verify_action(
        env, hamlet, _set(env, denmark, "lunch", 0), num_events=1, event_types=["muted_topics"]
    )
    assert events[0] == {"type": "muted_topics", "muted_topics": [], "id": events[0]["id"]}
    events = await verify_action(
        env, hamlet, _set(env, denmark, "tea", 3), num_events=1, event_types=["muted_topics"]
    )
    assert events[0]["muted_topics"] == []
    await verify_action(
        env, hamlet, _set(env, denmark, "tea", 1), num_events=0, event_types=["realm_user"]
    )


async def test_several_topics_and_streams(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    verona = await env.subscribe("hamlet", "Verona")
    hamlet = env.users["hamlet"]
    await verify_action(env, hamlet, _set(env, verona, "b", 1), num_events=2)
    await verify_action(env, hamlet, _set(env, denmark, "z", 3), num_events=2)
    events = await verify_action(env, hamlet, _set(env, denmark, "a", 1), num_events=2)
    assert [t[:2] for t in events[0]["muted_topics"]] == [["Verona", "b"], ["Denmark", "a"]]
    await verify_action(env, hamlet, _set(env, verona, "B", 0), num_events=2)


async def test_legacy_endpoint(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.users["hamlet"]
    events = await verify_action(
        env,
        hamlet,
        _legacy(env, {"stream": "denmark", "topic": "Lunch", "op": "add"}),
        num_events=2,
    )
    assert events[1]["visibility_policy"] == 1 and events[1]["stream_id"] == denmark.id
    await verify_action(
        env,
        hamlet,
        _legacy(env, {"stream_id": denmark.id, "topic": "Lunch", "op": "add"}),
        num_events=0,
    )
    events = await verify_action(
        env,
        hamlet,
        _legacy(env, {"stream_id": denmark.id, "topic": "lunch", "op": "remove"}),
        num_events=2,
    )
    assert events[0]["muted_topics"] == []
    assert (events[1]["topic_name"], events[1]["visibility_policy"]) == ("lunch", 0)
