"""A queue vouches for the credentials that proved themselves on it (issue 9): re-armed
long-polls skip the database, and a change of credentials ends the trust at once."""

from __future__ import annotations

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

    def __init__(self, env: TestEnv) -> None:
        self.count = 0
        db = env.services.db
        original: Callable[[], AbstractAsyncContextManager[Any]] = db.read

        def counting() -> AbstractAsyncContextManager[Any]:
            self.count += 1
            return original()

        db.read = counting  # type: ignore[method-assign]


@pytest.fixture(params=["memory", "redis"])
async def timed_env(
    request: pytest.FixtureRequest, settings: Settings
) -> AsyncIterator[tuple[TestEnv, FakeClock]]:
    if request.param == "redis":
        settings = with_test_redis(settings)
    clock = FakeClock()
    async with running_env(settings, clock=clock) as env:
        yield env, clock


async def poll(env: TestEnv, user: str | User, queue_id: str, **kwargs: Any) -> Any:
    return await env.client(user, **kwargs).get(
        "/events", {"queue_id": queue_id, "dont_block": True}
    )


async def test_rearmed_polls_skip_the_database_until_trust_lapses(
    timed_env: tuple[TestEnv, FakeClock],
) -> None:
    env, clock = timed_env
    queue_id = (await register(env, env.users["hamlet"]))["queue_id"]
    reads = ReadCounter(env)
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
    timed_env: tuple[TestEnv, FakeClock],
) -> None:
    env, _ = timed_env
    queue_id = (await register(env, env.users["hamlet"]))["queue_id"]
    reads = ReadCounter(env)
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
