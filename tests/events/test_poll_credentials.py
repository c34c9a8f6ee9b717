"""A queue vouches for the credentials that proved themselves on it: re-armed
long-polls skip the database, and a change of credentials ends the trust at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.clock import FakeClock
from hubbub.db.tables import user_profile
from hubbub.events.queues import CREDENTIAL_RECHECK_SECONDS
from hubbub.models import User
from hubbub.settings import Settings
from tests.events.verify import register
from tests.helpers import TestEnv, assert_error, assert_success, running_env, with_test_redis

UNAUTHORIZED: dict[str, Any] = {"status": 401, "code": "UNAUTHORIZED"}


class ReadCounter:
    """Counts the database reads the server opens (authentication is one)."""

    def __init__(self, env: TestEnv, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        db = env.services.db
        original: Callable[[], AbstractAsyncContextManager[Any]] = db.read

        def counting() -> AbstractAsyncContextManager[Any]:
            self.count += 1
            return original()

        monkeypatch.setattr(db, "read", counting)


@pytest.fixture(params=["memory", "redis"])
async def timed_env(
    request: pytest.FixtureRequest, settings: Settings
) -> AsyncIterator[tuple[TestEnv, FakeClock]]:
    if request.param == "redis":
        settings = with_test_redis(settings)
    # No heartbeat ends a waiting poll while a test looks at it.
    settings = replace(settings, heartbeat_seconds=30)
    clock = FakeClock()
    async with running_env(settings, clock=clock) as env:
        yield env, clock


async def poll(env: TestEnv, user: str | User, queue_id: str, **kwargs: Any) -> Any:
    return await env.client(user, **kwargs).get(
        "/events", {"queue_id": queue_id, "dont_block": True}
    )


async def test_rearmed_polls_skip_the_database_until_trust_lapses(
    timed_env: tuple[TestEnv, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, clock = timed_env
    queue_id = (await register(env, env.users["hamlet"]))["queue_id"]
    reads = ReadCounter(env, monkeypatch)
    for _ in range(3):
        assert assert_success(await poll(env, "hamlet", queue_id))["events"] == []
    assert reads.count == 0
    # Past the recheck interval the database is asked again, once; then trusted again.
    clock.advance(CREDENTIAL_RECHECK_SECONDS + 1)
    assert_success(await poll(env, "hamlet", queue_id))
    assert reads.count == 1
    assert_success(await poll(env, "hamlet", queue_id))
    assert reads.count == 1


async def test_a_queue_vouches_only_for_its_owner_on_its_subdomain(
    timed_env: tuple[TestEnv, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = timed_env
    queue_id = (await register(env, env.users["hamlet"]))["queue_id"]
    reads = ReadCounter(env, monkeypatch)
    # Another user's valid credentials: asked of the database, and the queue is not theirs.
    assert_error(
        await poll(env, "othello", queue_id),
        f"Bad event queue ID: {queue_id}",
        code="BAD_EVENT_QUEUE_ID",
    )
    assert reads.count == 1
    # The owner's credentials on another subdomain are not the ones the queue saw.
    assert_error(
        await poll(env, "hamlet", queue_id, host="elsewhere.localhost"),
        "Account is not associated with this subdomain",
    )
    assert reads.count == 2
    # A bad key for the owner's email.
    wrong_key = replace(env.users["hamlet"], api_key="x" * 32)
    assert_error(await poll(env, wrong_key, queue_id), "Invalid API key", **UNAUTHORIZED)
    assert reads.count == 3


async def test_a_new_api_key_ends_the_trust_at_once(timed_env: tuple[TestEnv, FakeClock]) -> None:
    env, _ = timed_env
    queue_id = (await register(env, env.users["hamlet"]))["queue_id"]
    new_key = assert_success(await env.client("hamlet").post("/users/me/api_key/regenerate"))[
        "api_key"
    ]
    assert_error(await poll(env, "hamlet", queue_id), "Invalid API key", **UNAUTHORIZED)
    assert_success(await poll(env, replace(env.users["hamlet"], api_key=new_key), queue_id))


async def test_deactivation_ends_the_trust_at_once(timed_env: tuple[TestEnv, FakeClock]) -> None:
    env, _ = timed_env
    hamlet = env.users["hamlet"]
    queue_id = (await register(env, hamlet))["queue_id"]
    assert_success(await env.client("desdemona").delete(f"/users/{hamlet.id}"))
    assert_error(
        await poll(env, "hamlet", queue_id),
        "Account is deactivated",
        status=401,
        code="USER_DEACTIVATED",
    )


async def test_a_changed_login_email_ends_the_trust_at_once(
    timed_env: tuple[TestEnv, FakeClock],
) -> None:
    env, _ = timed_env
    hamlet = env.users["hamlet"]
    # Logging in with the address the API shows (user<id>@... once hidden) stops working
    # when the visibility changes it.
    assert_success(await env.client("hamlet").patch("/settings", {"email_address_visibility": 5}))
    hidden = await env.reload(hamlet)
    assert hidden.email != hidden.delivery_email
    client_user = replace(hidden, delivery_email=hidden.email)
    queue_id = (await register(env, client_user))["queue_id"]
    assert_success(await poll(env, client_user, queue_id))
    assert_success(await env.client("hamlet").patch("/settings", {"email_address_visibility": 1}))
    assert_error(await poll(env, client_user, queue_id), "Invalid API key", **UNAUTHORIZED)


async def test_a_key_changed_behind_the_servers_back_lapses_within_the_interval(
    timed_env: tuple[TestEnv, FakeClock],
) -> None:
    """A command run on the same database (``hubbub revoke-api-keys`` with no Redis) does
    not tell the server; the queue's trust lapses within ``CREDENTIAL_RECHECK_SECONDS``."""
    env, clock = timed_env
    hamlet = env.users["hamlet"]
    queue_id = (await register(env, hamlet))["queue_id"]
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(user_profile).where(user_profile.c.id == hamlet.id).values(api_key="y" * 32)
        )
    clock.advance(CREDENTIAL_RECHECK_SECONDS + 1)
    assert_error(await poll(env, "hamlet", queue_id), "Invalid API key", **UNAUTHORIZED)


async def test_a_poll_its_queue_does_not_vouch_for_changes_nothing(
    timed_env: tuple[TestEnv, FakeClock],
) -> None:
    """On Redis the queue's word is checked inside the poll's own script call: credentials
    it does not vouch for stop the poll before it acknowledges events or ends the owner's
    waiting poll."""
    env, _ = timed_env
    hamlet = env.users["hamlet"]
    queue_id = (await register(env, hamlet, event_types=["realm_user"]))["queue_id"]
    await env.create_user("a@example.com", "Aaa Aaa")
    waiting = asyncio.create_task(
        env.client("hamlet").get("/events", {"queue_id": queue_id, "last_event_id": 0})
    )
    await asyncio.sleep(0.2)
    assert not waiting.done()
    wrong_key = replace(hamlet, api_key="x" * 32)
    for args in ({"last_event_id": 0}, {"last_event_id": 5, "dont_block": True}):
        response = await env.client(wrong_key).get("/events", {"queue_id": queue_id, **args})
        assert_error(response, "Invalid API key", **UNAUTHORIZED)
    await asyncio.sleep(0.2)
    assert not waiting.done()  # not ended by the rejected polls
    await env.create_user("b@example.com", "Bbb Bbb")
    events = assert_success(await asyncio.wait_for(waiting, 5))["events"]
    assert [e["person"]["full_name"] for e in events] == ["Bbb Bbb"]
    # Nothing acknowledged by the rejected polls (the second would have dropped every
    # event through 5): event 1 is still there for the owner's next poll.
    again = await env.client("hamlet").get(
        "/events", {"queue_id": queue_id, "last_event_id": 0, "dont_block": True}
    )
    assert [e["id"] for e in assert_success(again)["events"]] == [1]


async def test_who_asks_is_answered_before_what_was_asked(
    timed_env: tuple[TestEnv, FakeClock], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request whose queue would vouch for it, provisionally, but that fails before its
    poll (a bad parameter) or names a queue gone meanwhile, answers as it would after
    a database authentication: bad credentials first."""
    env, clock = timed_env
    hamlet = env.users["hamlet"]
    wrong_key = replace(hamlet, api_key="x" * 32)
    queue_id = (await register(env, hamlet))["queue_id"]
    bad = {"queue_id": queue_id, "last_event_id": "soon", "dont_block": True}
    assert_error(await env.client(wrong_key).get("/events", bad), "Invalid API key", **UNAUTHORIZED)
    reads = ReadCounter(env, monkeypatch)
    expected = "last_event_id is not valid JSON"
    assert_error(await env.client("hamlet").get("/events", bad), expected)
    assert reads.count == 0  # the queue vouched, when asked
    clock.advance(CREDENTIAL_RECHECK_SECONDS + 1)
    assert_error(await env.client("hamlet").get("/events", bad), expected)
    assert reads.count == 1  # the database, once the queue's trust lapsed
    assert_success(await env.client("hamlet").delete("/events", {"queue_id": queue_id}))
    assert_error(await poll(env, wrong_key, queue_id), "Invalid API key", **UNAUTHORIZED)
    assert_error(
        await poll(env, "hamlet", queue_id),
        f"Bad event queue ID: {queue_id}",
        code="BAD_EVENT_QUEUE_ID",
    )
