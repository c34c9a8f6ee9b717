"""``POST /user_topics`` and the deprecated ``PATCH /users/me/subscriptions/muted_topics``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions.streams import bulk_remove_subscriptions
from hubbub.clock import FakeClock
from hubbub.db.tables import user_topic
from hubbub.models import Stream
from hubbub.settings import Settings
from tests.helpers import TestEnv, assert_error, assert_success, running_env

MUTED_TOPICS = "/users/me/subscriptions/muted_topics"


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    """The shared ``env`` on a clock that only moves when told, so times can be compared."""
    async with running_env(settings, clock=FakeClock()) as test_env:
        yield test_env


async def _rows(env: TestEnv, user: str = "hamlet") -> list[tuple[int, str, int, float]]:
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(
                user_topic.c.stream_id,
                user_topic.c.topic_name,
                user_topic.c.visibility_policy,
                user_topic.c.last_updated,
            )
            .where(user_topic.c.user_profile_id == env.users[user].id)
            .order_by(user_topic.c.id)
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]


async def _policies(env: TestEnv, user: str = "hamlet") -> list[tuple[int, str, int]]:
    return [(s, t, p) for s, t, p, _ in await _rows(env, user)]


async def _set(
    env: TestEnv, stream: Stream | int, topic: str, policy: Any, user: str = "hamlet"
) -> Any:
    stream_id = stream if isinstance(stream, int) else stream.id
    return await env.client(user).post(
        "/user_topics", {"stream_id": stream_id, "topic": topic, "visibility_policy": policy}
    )


async def test_set_each_policy_then_remove(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    now = env.services.clock.now()
    assert_success(await _set(env, denmark, "lunch", 1))
    assert await _rows(env) == [(denmark.id, "lunch", 1, now)]
    for policy in (2, 3, 1):
        assert_success(await _set(env, denmark, "lunch", policy))
        assert await _policies(env) == [(denmark.id, "lunch", policy)]
    # 0 ("none") deletes the row.
    assert_success(await _set(env, denmark, "lunch", 0))
    assert await _rows(env) == []
    # Other users are untouched.
    assert await _rows(env, "othello") == []


async def test_register_state(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    now = int(env.services.clock.now())
    assert_success(await _set(env, denmark, "lunch", 1))
    assert_success(await _set(env, denmark, "dinner", 3))
    state = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["user_topic"]})
    )
    assert state["user_topics"] == [
        {
            "stream_id": denmark.id,
            "topic_name": "dinner",
            "last_updated": now,
            "visibility_policy": 3,
        },
        {
            "stream_id": denmark.id,
            "topic_name": "lunch",
            "last_updated": now,
            "visibility_policy": 1,
        },
    ]
    legacy = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["muted_topics"]})
    )
    assert legacy["muted_topics"] == [["Denmark", "lunch", now]]


async def test_topics_match_case_insensitively_and_keep_latest_case(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    assert_success(await _set(env, denmark, "Lunch", 1))
    assert_success(await _set(env, denmark, "LUNCH", 3))
    assert await _policies(env) == [(denmark.id, "LUNCH", 3)]
    # The same policy in another case only renames the row.
    assert_success(await _set(env, denmark, "lunch", 3))
    assert await _policies(env) == [(denmark.id, "lunch", 3)]
    assert_success(await _set(env, denmark, "LuNcH", 0))
    assert await _rows(env) == []


async def test_same_policy_again_changes_nothing(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    first = env.services.clock.now()
    assert_success(await _set(env, denmark, "lunch", 1))
    env.advance(60)
    # Zulip 8.0 treats it as a no-op: success, and last_updated is kept.
    assert_success(await _set(env, denmark, "lunch", 1))
    assert await _rows(env) == [(denmark.id, "lunch", 1, first)]
    # A change of policy records the time of the change.
    assert_success(await _set(env, denmark, "lunch", 3))
    assert await _rows(env) == [(denmark.id, "lunch", 3, first + 60)]


async def test_remove_when_not_set_succeeds(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    assert_success(await _set(env, denmark, "never set", 0))
    assert await _rows(env) == []


async def test_topic_lengths(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    assert_success(await _set(env, denmark, "x" * 60, 1))
    assert_error(await _set(env, denmark, "y" * 61, 1), "topic is too long (limit: 60 characters)")
    # Zulip does not refuse an empty topic name here.
    assert_success(await _set(env, denmark, "", 1))
    assert await _policies(env) == [(denmark.id, "x" * 60, 1), (denmark.id, "", 1)]


async def test_user_topics_errors_change_nothing(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    assert_success(await _set(env, denmark, "lunch", 2))
    before = await _rows(env)
    hamlet = env.client("hamlet")
    for policy in (4, -1):
        assert_error(await _set(env, denmark, "lunch", policy), "Invalid visibility_policy")
    assert_error(await _set(env, denmark, "lunch", "muted"), "visibility_policy is not valid JSON")
    assert_error(await _set(env, denmark, "lunch", 1.5), "visibility_policy is not an integer")
    assert_error(
        await hamlet.post("/user_topics", {"stream_id": denmark.id, "visibility_policy": 1}),
        "Missing 'topic' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await hamlet.post("/user_topics", {"topic": "lunch", "visibility_policy": 1}),
        "Missing 'stream_id' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await hamlet.post("/user_topics", {"stream_id": denmark.id, "topic": "lunch"}),
        "Missing 'visibility_policy' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await hamlet.post(
            "/user_topics", {"stream_id": "x", "topic": "lunch", "visibility_policy": 1}
        ),
        "stream_id is not valid JSON",
    )
    missing = secret.id + 1000
    for policy in (0, 1):
        assert_error(await _set(env, missing, "lunch", policy), "Invalid stream ID")
    # A private stream the user is not subscribed to.
    assert_error(await _set(env, secret, "lunch", 1), "Invalid stream ID")
    assert await _rows(env) == before
    assert await _rows(env, "othello") == []


async def test_access_rules(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    secret = await env.subscribe("othello", "Secret", invite_only=True)
    # Any member may set policies in a public stream without subscribing.
    assert_success(await _set(env, denmark, "lunch", 1, user="othello"))
    # Administrators get no exemption for private streams, as in Zulip.
    assert_error(await _set(env, secret, "lunch", 1, user="iago"), "Invalid stream ID")
    # Guests only reach streams they are subscribed to (or web-public ones).
    assert_error(await _set(env, denmark, "lunch", 1, user="polonius"), "Invalid stream ID")
    await env.subscribe("polonius", "Denmark")
    assert_success(await _set(env, denmark, "lunch", 1, user="polonius"))
    web = await env.subscribe("hamlet", "Web", is_web_public=True)
    assert_success(await _set(env, web, "lunch", 3, user="polonius"))
    assert await _policies(env, "polonius") == [(denmark.id, "lunch", 1), (web.id, "lunch", 3)]
    assert await _rows(env, "iago") == []


async def test_former_subscriber_may_only_remove(env: TestEnv) -> None:
    secret = await env.subscribe("hamlet", "Secret", invite_only=True)
    await env.subscribe("othello", "Secret")
    assert_success(await _set(env, secret, "plans", 1))
    assert_success(await _set(env, secret, "gossip", 3))
    async with env.services.write() as tx:
        await bulk_remove_subscriptions(tx, env.realm, [secret], [env.users["hamlet"]])
    assert_error(await _set(env, secret, "plans", 2), "Invalid stream ID")
    assert_success(await _set(env, secret, "plans", 0))
    assert_success(
        await env.client("hamlet").patch(
            MUTED_TOPICS, {"stream": "Secret", "topic": "gossip", "op": "remove"}
        )
    )
    assert await _rows(env) == []


async def test_muted_topics_add_and_remove(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    hamlet = env.client("hamlet")
    now = env.services.clock.now()
    assert_success(
        await hamlet.patch(MUTED_TOPICS, {"stream": "denmark", "topic": "Lunch", "op": "add"})
    )
    assert await _rows(env) == [(denmark.id, "Lunch", 1, now)]
    # Already muted: success since feature level 170.
    assert_success(
        await hamlet.patch(MUTED_TOPICS, {"stream_id": denmark.id, "topic": "lunch", "op": "add"})
    )
    assert await _policies(env) == [(denmark.id, "lunch", 1)]
    assert_success(
        await hamlet.patch(
            MUTED_TOPICS, {"stream_id": denmark.id, "topic": "LUNCH", "op": "remove"}
        )
    )
    assert await _rows(env) == []
    # Not muted: success too.
    assert_success(
        await hamlet.patch(MUTED_TOPICS, {"stream": "Denmark", "topic": "lunch", "op": "remove"})
    )
    # "remove" clears any policy, like Zulip's unmute_topic.
    assert_success(await _set(env, denmark, "dinner", 3))
    assert_success(
        await hamlet.patch(MUTED_TOPICS, {"stream": "Denmark", "topic": "dinner", "op": "remove"})
    )
    assert await _rows(env) == []
    # "add" turns a followed topic into a muted one.
    assert_success(await _set(env, denmark, "tea", 3))
    assert_success(
        await hamlet.patch(MUTED_TOPICS, {"stream": "Denmark", "topic": "tea", "op": "add"})
    )
    assert await _policies(env) == [(denmark.id, "tea", 1)]


async def test_muted_topics_errors_change_nothing(env: TestEnv) -> None:
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Secret", invite_only=True)
    hamlet = env.client("hamlet")
    assert_success(
        await hamlet.patch(MUTED_TOPICS, {"stream": "Denmark", "topic": "lunch", "op": "add"})
    )
    before = await _rows(env)

    async def check(params: dict[str, Any], msg: str, code: str = "BAD_REQUEST") -> None:
        assert_error(await hamlet.patch(MUTED_TOPICS, params), msg, code=code)

    await check(
        {"stream": "Denmark", "stream_id": denmark.id, "topic": "dinner", "op": "add"},
        "Please choose one: 'stream' or 'stream_id'.",
    )
    await check({"topic": "dinner", "op": "add"}, "Please supply 'stream'.")
    await check({"stream": "Denmark", "topic": "dinner", "op": "toggle"}, "Invalid op")
    await check(
        {"stream": "Denmark", "op": "add"}, "Missing 'topic' argument", "REQUEST_VARIABLE_MISSING"
    )
    await check(
        {"stream": "Denmark", "topic": "dinner"},
        "Missing 'op' argument",
        "REQUEST_VARIABLE_MISSING",
    )
    await check(
        {"stream": "Denmark", "topic": "z" * 61, "op": "add"},
        "topic is too long (limit: 60 characters)",
    )
    await check(
        {"stream_id": "Denmark", "topic": "dinner", "op": "add"}, "stream_id is not valid JSON"
    )
    await check(
        {"stream": "Nowhere", "topic": "dinner", "op": "add"}, "Invalid stream name 'Nowhere'"
    )
    await check(
        {"stream": "Secret", "topic": "dinner", "op": "add"}, "Invalid stream name 'Secret'"
    )
    await check(
        {"stream_id": denmark.id + 1000, "topic": "dinner", "op": "add"}, "Invalid stream ID"
    )
    # Unmuting asks only that the stream exists, and says so in Zulip's words.
    await check({"stream": "Nowhere", "topic": "lunch", "op": "remove"}, "Topic is not muted")
    await check(
        {"stream_id": denmark.id + 1000, "topic": "lunch", "op": "remove"}, "Topic is not muted"
    )
    assert await _rows(env) == before


async def test_concurrent_first_follows_of_a_topic_both_succeed(env: TestEnv) -> None:
    """Two transactions that both find no row for a topic and both follow it (two first
    sends to a new topic at the same moment): the second waits for the first's row and
    updates it instead of failing on the unique index. On SQLite the writer lock runs them
    one after the other; on PostgreSQL the second blocks on the index until the first
    commits."""
    from hubbub.actions.user_topics import do_set_user_topic_visibility_policy
    from hubbub.queries.user_topics import VisibilityPolicy

    user = env.users["hamlet"]
    target = await env.subscribe("hamlet", "Denmark")
    now = env.services.clock.now()
    started = asyncio.Event()

    async def second() -> bool:
        started.set()
        async with env.services.write() as tx:
            return await do_set_user_topic_visibility_policy(
                tx, user, target, "New Topic", VisibilityPolicy.FOLLOWED, now=now
            )

    async with env.services.write() as tx:
        assert await do_set_user_topic_visibility_policy(
            tx, user, target, "new topic", VisibilityPolicy.FOLLOWED, now=now
        )
        task = asyncio.create_task(second())
        await started.wait()
        # Long enough for PostgreSQL's second transaction to reach its insert and wait.
        await asyncio.sleep(0.2)
    await task
    assert await _policies(env) == [(target.id, "New Topic", VisibilityPolicy.FOLLOWED)]
