"""A command's events reach the running server's queues through the outbox
(``events/outbox.py``, ``workers/event_outbox.py``): stored in the command's transaction,
published by the server once, and only for what committed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
import sqlalchemy as sa

from hubbub.actions.default_streams import do_add_default_streams
from hubbub.actions.users import check_create_user, do_regenerate_api_key
from hubbub.bootstrap import create_user_in_realm
from hubbub.cli import CommandServices, command_services
from hubbub.db.engine import Database
from hubbub.db.tables import event_outbox
from hubbub.errors import JsonableError
from hubbub.events.bus import Notice
from hubbub.events.outbox import claim_outbox, store_outbox
from hubbub.models import Role, User
from hubbub.queries.realms import access_realm_by_subdomain
from hubbub.services import build_services
from hubbub.workers.event_outbox import relay_event_outbox
from tests.events.verify import register, verify_action
from tests.helpers import TestEnv, assert_error, assert_success


@pytest.fixture
async def command(env: TestEnv) -> AsyncIterator[CommandServices]:
    """The services of a command run on the server's database, as ``hubbub`` builds them."""
    services = command_services(env.services.settings)
    try:
        yield services
    finally:
        await services.close()


async def _outbox_rows(env: TestEnv) -> int:
    async with env.services.db.read() as conn:
        return int(await conn.scalar(sa.select(sa.func.count()).select_from(event_outbox)) or 0)


async def _create(
    command: CommandServices, email: str, *, bot: bool = False, role: Role = Role.MEMBER
) -> User:
    return await create_user_in_realm(
        command,
        subdomain="",
        email=email,
        full_name="Made By Command",
        role=role,
        password=None,
        bot=bot,
    )


async def test_a_created_user_reaches_open_queues(env: TestEnv, command: CommandServices) -> None:
    """The events equal those of the API's user creation: applied to the old state they
    give a fresh /register (default streams' subscriptions and system groups included)."""
    denmark = await env.subscribe("hamlet", "Denmark")
    async with env.services.write() as tx:
        await do_add_default_streams(tx, env.realm, [denmark])
    created: list[User] = []

    async def action() -> None:
        created.append(await _create(command, "new@example.com"))
        # Committed, stored, not yet published.
        assert await _outbox_rows(env) > 0
        assert await relay_event_outbox(env.services) > 0

    events = await verify_action(
        env,
        env.users["hamlet"],
        action,
        include_subscribers=True,
        event_types=["realm_user", "subscription", "user_group"],
    )
    assert await _outbox_rows(env) == 0
    assert [(e["type"], e["op"]) for e in events] == [
        ("realm_user", "add"),
        ("user_group", "add_members"),
        ("user_group", "add_members"),
        ("subscription", "peer_add"),
    ]
    assert events[0]["person"]["user_id"] == created[0].id
    assert events[3]["user_ids"] == [created[0].id]


async def test_a_created_bot_reaches_open_queues(env: TestEnv, command: CommandServices) -> None:
    async def action() -> None:
        await _create(command, "robot-bot@example.com", bot=True)
        await relay_event_outbox(env.services)

    events = await verify_action(env, env.users["othello"], action, num_events=3)
    person = events[0]["person"]
    assert (events[0]["type"], events[0]["op"]) == ("realm_user", "add")
    assert person["is_bot"] is True and person["email"] == "robot-bot@example.com"


async def test_nothing_is_published_before_the_relay_nor_twice(
    env: TestEnv, command: CommandServices
) -> None:
    queue_id = (await register(env, env.users["hamlet"], event_types=["realm_user"]))["queue_id"]
    await _create(command, "a@example.com")
    await _create(command, "b@example.com")
    assert await env.events("hamlet", queue_id, types=["realm_user"]) == []
    assert await relay_event_outbox(env.services) > 0
    assert await relay_event_outbox(env.services) == 0
    events = await env.events("hamlet", queue_id, types=["realm_user"])
    # In the order they were committed.
    assert [e["person"]["email"] for e in events] == ["a@example.com", "b@example.com"]


async def test_a_rolled_back_command_stores_nothing(env: TestEnv, command: CommandServices) -> None:
    async with command.db.read() as conn:
        realm = await access_realm_by_subdomain(conn, "")
    with pytest.raises(RuntimeError):
        async with command.write() as tx:
            await check_create_user(
                tx,
                realm,
                email="gone@example.com",
                full_name="Never There",
                password=None,
                now=command.clock.now(),
            )
            assert tx.notices
            raise RuntimeError("the command fails after its change")
    assert await _outbox_rows(env) == 0
    # Bad input (an address in use) changes nothing either.
    with pytest.raises(JsonableError, match="already in use"):
        await _create(command, "hamlet@example.com")
    assert await _outbox_rows(env) == 0


async def test_changed_credentials_end_the_queues_trust(
    env: TestEnv, command: CommandServices
) -> None:
    """``hubbub rotate-api-key``: once relayed, the old key no longer polls, without
    waiting for the queue's trust to lapse."""
    hamlet = env.users["hamlet"]
    queue_id = (await register(env, hamlet))["queue_id"]
    poll = {"queue_id": queue_id, "dont_block": True}
    assert_success(await env.client(hamlet).get("/events", poll))
    async with command.write() as tx:
        await do_regenerate_api_key(tx, hamlet)
    # The queue still vouches for the old key: the server was not told yet.
    assert_success(await env.client(hamlet).get("/events", poll))
    assert await relay_event_outbox(env.services) == 1
    response = await env.client(hamlet).get("/events", poll)
    assert_error(response, "Invalid API key", status=401, code="UNAUTHORIZED")
    fresh = await env.reload(hamlet)
    assert_success(await env.client(fresh).get("/events", poll))


async def test_concurrent_claims_take_each_row_once(env: TestEnv) -> None:
    """Two workers claiming at once (on PostgreSQL really at once: ``SKIP LOCKED``)
    between them take every row, none twice."""
    count = 1200
    notices = [Notice(env.realm.id, {"type": "n", "i": i}, (1,)) for i in range(count)]
    async with env.services.db.write() as conn:
        await store_outbox(conn, notices, [], now=0.0)
    other = Database(env.services.settings.database_url)
    seen: list[int] = []

    async def claimer(db: Database) -> None:
        while True:
            async with db.write() as conn:
                claimed = await claim_outbox(conn, limit=50)
                # Hold the claim a moment, so that the other claims meanwhile.
                await asyncio.sleep(0.001)
            seen.extend(n.event["i"] for n in claimed.notices)
            if not claimed.rows:
                return

    try:
        await asyncio.gather(claimer(env.services.db), claimer(other))
    finally:
        await other.dispose()
    assert sorted(seen) == list(range(count))
    assert await _outbox_rows(env) == 0


async def test_several_servers_publish_each_event_once(env: TestEnv) -> None:
    """With Redis every worker relays onto the shared queues: each event arrives once."""
    if not env.services.settings.redis_url:
        pytest.skip("Redis variant: the workers of one installation share their queues")
    second = build_services(replace(env.services.settings))
    await second.start()
    command = command_services(env.services.settings)
    try:
        queue_id = (await register(env, env.users["hamlet"], event_types=["realm_user"]))[
            "queue_id"
        ]
        emails = [f"u{i}@example.com" for i in range(12)]
        for email in emails:
            await _create(command, email)
        await asyncio.gather(relay_event_outbox(env.services), relay_event_outbox(second))
        assert await relay_event_outbox(second) == 0
    finally:
        await command.close()
        await second.close()
    events = await env.events("hamlet", queue_id, types=["realm_user"])
    assert sorted(e["person"]["email"] for e in events) == sorted(emails)
