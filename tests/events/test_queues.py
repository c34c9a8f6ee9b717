"""``POST /register``, ``GET /events``, ``DELETE /events``: queues and long-polling."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.app import create_app
from hubbub.events.alarms import wake
from hubbub.events.bus import MemoryEventBus
from hubbub.events.redis_bus import RedisEventBus
from hubbub.services import build_services
from hubbub.settings import Settings
from tests.events.verify import register
from tests.helpers import TestEnv, assert_error, assert_success, running_env, with_test_redis
from tests.messages_helpers import send_stream_message


async def test_register_shape(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    state = await register(env, hamlet)
    assert isinstance(state["queue_id"], str) and state["last_event_id"] == -1
    assert state["zulip_feature_level"] == 372 and state["zulip_version"].startswith("10.2")
    assert state["max_message_length"] == 10000 and state["max_topic_length"] == 60
    assert state["max_stream_name_length"] == 60
    assert state["max_stream_description_length"] == 1024
    assert state["event_queue_longpoll_timeout_seconds"] == 90
    assert state["realm_name"] == "Hubbub"
    assert state["realm_message_retention_days"] == -1
    assert state["user_id"] == hamlet.id and state["email"] == "hamlet@example.com"
    assert state["full_name"] == "Hamlet"
    assert state["is_admin"] is False and state["is_guest"] is False
    assert state["can_create_public_streams"] is True
    assert {p["user_id"] for p in state["realm_users"]} == {u.id for u in env.users.values()}
    assert state["realm_non_active_users"] == [] and state["cross_realm_bots"] == []
    assert all("profile_data" in p for p in state["realm_users"])


async def test_register_state_follows_fetch_event_types(env: TestEnv) -> None:
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    assert "realm_users" in state and "realm_name" not in state
    state = await register(
        env, env.users["hamlet"], event_types=["realm_user"], fetch_event_types=["realm"]
    )
    assert "realm_users" not in state and "realm_name" in state


async def test_a_message_queue_reads_no_streams(env: TestEnv) -> None:
    """A bot's queue (``event_types: ["message"]``) carries no stream state, so its
    registration does not read the realm's streams or the user's subscriptions."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement.lower())

    engine = env.services.db.engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", record)
    try:
        state = await register(env, env.users["hamlet"], event_types=["message"])
        assert not any(key in state for key in ("subscriptions", "streams"))
        assert statements  # the listener sees the registration's reads
        assert not [s for s in statements if "from stream" in s or "from subscription" in s]
        statements.clear()
        state = await register(env, env.users["hamlet"], event_types=["default_streams"])
        assert "realm_default_streams" in state and "subscriptions" not in state
        # The default streams' ids (feature level 330), without reading every stream.
        assert [s for s in statements if "from default_stream" in s]
        assert not [s for s in statements if "from stream" in s]
        assert not [s for s in statements if "from subscription" in s]
    finally:
        sa.event.remove(engine, "before_cursor_execute", record)


async def test_guest_role_in_state(env: TestEnv) -> None:
    state = await register(env, env.users["polonius"])
    assert state["is_guest"] is True and state["can_create_public_streams"] is False
    state = await register(env, env.users["desdemona"])
    assert state["is_owner"] is True and state["is_admin"] is True
    # Web-public streams need the realm's spectator access, off by default (as in Zulip).
    assert state["can_create_web_public_streams"] is False
    assert_success(await env.client("desdemona").patch("/realm", {"enable_spectator_access": True}))
    state = await register(env, env.users["desdemona"])
    assert state["can_create_web_public_streams"] is True


async def test_register_validation(env: TestEnv) -> None:
    client = env.client("hamlet")
    assert_error(
        await client.post("/register", {"event_types": "realm"}), "event_types is not valid JSON"
    )
    assert_error(await client.post("/register", {"narrow": [["stream"]]}), "Invalid narrow")
    assert_error(
        await client.post("/register", {"client_capabilities": {"bulk_message_deletion": "yes"}}),
        'client_capabilities["bulk_message_deletion"] is not a boolean',
    )
    body = assert_success(
        await client.post(
            "/register",
            {
                "narrow": [["stream", "Denmark"], {"operator": "topic", "operand": "x"}],
                "client_capabilities": {"notification_settings_null": True},
                "queue_lifespan_secs": 3600,
            },
        )
    )
    assert body["queue_id"]


async def test_events_arrive_and_are_pruned(env: TestEnv) -> None:
    client = env.client("hamlet")
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    queue_id = state["queue_id"]
    await env.create_user("a@example.com", "Aaa Aaa")
    await env.create_user("b@example.com", "Bbb Bbb")
    body = assert_success(await client.get("/events", {"queue_id": queue_id, "last_event_id": -1}))
    assert body["queue_id"] == queue_id
    assert [e["id"] for e in body["events"]] == [0, 1]
    assert [e["person"]["full_name"] for e in body["events"]] == ["Aaa Aaa", "Bbb Bbb"]
    # Acknowledging event 0 leaves event 1.
    body = assert_success(await client.get("/events", {"queue_id": queue_id, "last_event_id": 0}))
    assert [e["id"] for e in body["events"]] == [1]
    body = assert_success(
        await client.get("/events", {"queue_id": queue_id, "last_event_id": 1, "dont_block": True})
    )
    assert body["events"] == []
    assert_error(
        await client.get("/events", {"queue_id": queue_id, "last_event_id": 0}),
        "An event newer than 0 has already been pruned!",
    )


@pytest.fixture(params=["memory", "redis"])
async def quiet_env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    """An env whose heartbeat cannot race the event a test is waiting for.

    The shared fixture ends quiet polls after 0.2 s so heartbeat tests are quick; on a busy
    machine creating a user can take longer than that, and the poll then ends with a
    heartbeat instead of the event (a CI failure seen on this test).
    """
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(replace(settings, heartbeat_seconds=30)) as test_env:
        yield test_env


async def test_long_poll_wakes_on_event(quiet_env: TestEnv) -> None:
    env = quiet_env
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    poll = asyncio.create_task(
        env.client("hamlet").get("/events", {"queue_id": state["queue_id"], "last_event_id": -1})
    )
    await asyncio.sleep(0.05)
    assert not poll.done()
    await env.create_user("a@example.com", "Aaa Aaa")
    body = assert_success(await asyncio.wait_for(poll, 5))
    assert [e["type"] for e in body["events"]] == ["realm_user"]


async def test_woken_polls_are_answered_from_one_read(
    quiet_env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis: the process holding the polls a message wakes reads all their queues in one
    call and answers them with it (each poll used to read its own queue)."""
    env = quiet_env
    names = ["hamlet", "othello", "iago", "shiva"]
    for name in names:
        await env.subscribe(name, "Denmark")
    queues = [
        (name, await register(env, env.users[name], event_types=["message"])) for name in names
    ]
    polls = [
        asyncio.create_task(
            env.client(name).get("/events", {"queue_id": state["queue_id"], "last_event_id": -1})
        )
        for name, state in queues
    ]
    await asyncio.sleep(0.2)
    assert not any(poll.done() for poll in polls)
    redis = env.services.redis
    reads = 0
    if redis is not None:
        pipeline = redis.pipeline

        def counting(*args: Any, **kwargs: Any) -> Any:
            nonlocal reads
            reads += 1
            return pipeline(*args, **kwargs)

        monkeypatch.setattr(redis, "pipeline", counting)
    sent = await send_stream_message(env, "hamlet", "Denmark", "to everyone polling")
    bodies = [assert_success(await asyncio.wait_for(poll, 5)) for poll in polls]
    for body in bodies:
        assert [(e["type"], e["message"]["id"]) for e in body["events"]] == [("message", sent)]
    if redis is not None:
        # The send's own round trips (the queues of its recipients; the pushes and the
        # wake-up), none per woken poll.
        assert reads <= 2


async def test_a_poll_waits_after_one_round_trip(
    quiet_env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis: a poll checks the credentials its queue vouches for, acknowledges, keeps its
    queue alive, announces itself and reads its queue in one script call, and its own
    announcement does not wake it (it made five round trips before waiting); the event it
    waits for still wakes it."""
    env = quiet_env
    redis = env.services.redis
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    calls: list[str] = []
    if redis is not None:
        execute_command, pipeline = redis.execute_command, redis.pipeline

        async def counting_command(*args: Any, **kwargs: Any) -> Any:
            calls.append(str(args[0]))
            return await execute_command(*args, **kwargs)  # type: ignore[no-untyped-call]

        def counting_pipeline(*args: Any, **kwargs: Any) -> Any:
            calls.append("pipeline")
            return pipeline(*args, **kwargs)

        monkeypatch.setattr(redis, "execute_command", counting_command)
        monkeypatch.setattr(redis, "pipeline", counting_pipeline)
    poll = asyncio.create_task(
        env.client("hamlet").get("/events", {"queue_id": state["queue_id"], "last_event_id": -1})
    )
    await asyncio.sleep(0.3)
    assert not poll.done()
    if redis is not None:
        # The poll's script, which also checks the credentials the queue vouches for.
        assert calls == ["EVALSHA"]
    await env.create_user("a@example.com", "Aaa Aaa")
    body = assert_success(await asyncio.wait_for(poll, 5))
    assert [e["type"] for e in body["events"]] == ["realm_user"]


async def test_a_read_older_than_the_poll_is_not_its_answer(quiet_env: TestEnv) -> None:
    """Redis: the listener may read a woken queue before the poll's own script has taken
    its generation; that read says nothing about the poll, which looks again and keeps
    waiting (it used to answer with an empty list), then gets its event."""
    env = quiet_env
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    poll = asyncio.create_task(
        env.client("hamlet").get("/events", {"queue_id": state["queue_id"], "last_event_id": -1})
    )
    await asyncio.sleep(0.3)
    bus = env.services.bus
    if isinstance(bus, RedisEventBus):
        [waiter] = bus._waiters[state["queue_id"]]
        # What the listener would have read just before the poll's script ran.
        bus._read_for[waiter] = (0, [b'{"id":0,"type":"stale"}'])
        wake(waiter, timed_out=False)
    await asyncio.sleep(0.3)
    assert not poll.done()
    await env.create_user("a@example.com", "Aaa Aaa")
    body = assert_success(await asyncio.wait_for(poll, 5))
    assert [e["type"] for e in body["events"]] == ["realm_user"]


async def test_quiet_poll_ends_with_heartbeat(env: TestEnv) -> None:
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    body = assert_success(
        await env.client("hamlet").get(
            "/events", {"queue_id": state["queue_id"], "last_event_id": -1}
        )
    )
    assert body["events"] == [{"type": "heartbeat", "id": 0}]


async def test_newer_poll_ends_older_one(quiet_env: TestEnv) -> None:
    env = quiet_env
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    params = {"queue_id": state["queue_id"], "last_event_id": -1}
    first = asyncio.create_task(env.client("hamlet").get("/events", params))
    await asyncio.sleep(0.05)
    second = asyncio.create_task(env.client("hamlet").get("/events", params))
    body = assert_success(await asyncio.wait_for(first, 5))
    assert body["events"] == []
    await env.create_user("a@example.com", "Aaa Aaa")
    body = assert_success(await asyncio.wait_for(second, 5))
    assert [e["type"] for e in body["events"]] == ["realm_user"]


async def test_bad_queue_ids(env: TestEnv) -> None:
    client = env.client("hamlet")
    body = assert_error(
        await client.get("/events", {"queue_id": "nope"}),
        "Bad event queue ID: nope",
        code="BAD_EVENT_QUEUE_ID",
    )
    assert body["queue_id"] == "nope"
    assert_error(
        await client.get("/events", {}),
        "Missing 'queue_id' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    # Someone else's queue is as good as unknown.
    state = await register(env, env.users["othello"])
    assert_error(
        await client.get("/events", {"queue_id": state["queue_id"]}),
        f"Bad event queue ID: {state['queue_id']}",
        code="BAD_EVENT_QUEUE_ID",
    )
    assert_error(
        await client.delete("/events", {"queue_id": state["queue_id"]}),
        f"Bad event queue ID: {state['queue_id']}",
        code="BAD_EVENT_QUEUE_ID",
    )


async def test_delete_queue(env: TestEnv) -> None:
    client = env.client("hamlet")
    state = await register(env, env.users["hamlet"])
    queue_id = state["queue_id"]
    assert_success(await client.delete("/events", {"queue_id": queue_id}))
    body = assert_error(
        await client.delete("/events", {"queue_id": queue_id}),
        f"Bad event queue ID: {queue_id}",
        code="BAD_EVENT_QUEUE_ID",
    )
    assert body["queue_id"] == queue_id
    assert_error(
        await client.get("/events", {"queue_id": queue_id}),
        f"Bad event queue ID: {queue_id}",
        code="BAD_EVENT_QUEUE_ID",
    )
    # Nothing is delivered to a deleted queue, and delivery to others goes on.
    other = await register(env, env.users["hamlet"], event_types=["realm_user"])
    await env.create_user("a@example.com", "Aaa Aaa")
    body = assert_success(
        await client.get("/events", {"queue_id": other["queue_id"], "dont_block": True})
    )
    assert len(body["events"]) == 1


async def test_idle_queues_expire(env: TestEnv) -> None:
    # The clock is the real one, so the bounds are taken on both sides of the registrations:
    # a slow machine may spend more than the short lifespan's margin registering.
    bus = env.services.bus
    before = env.services.clock.now()
    short = await register(env, env.users["hamlet"], queue_lifespan_secs=1)
    default = await register(env, env.users["hamlet"])
    after = env.services.clock.now()
    assert await bus.expire_queues(before + 0.5) == 0
    assert await bus.expire_queues(after + 2) == 1
    assert await bus.get_queue(short["queue_id"]) is None
    assert await bus.get_queue(default["queue_id"]) is not None
    assert await bus.expire_queues(after + 601) == 1
    assert_error(
        await env.client("hamlet").get("/events", {"queue_id": default["queue_id"]}),
        f"Bad event queue ID: {default['queue_id']}",
        code="BAD_EVENT_QUEUE_ID",
    )


async def test_memory_queues_survive_a_restart(settings: Settings) -> None:
    """A clean shutdown saves the in-memory queues; the next start restores them."""
    from hubbub.db.migrate import upgrade
    from tests.helpers import TestEnv as Env

    services = build_services(settings)
    assert isinstance(services.bus, MemoryEventBus)
    await upgrade(services.db)
    await services.start()
    env = Env(create_app(settings, services=services), services)
    await env.setup()
    state = await register(env, env.users["hamlet"], event_types=["realm_user"])
    await env.create_user("a@example.com", "Aaa Aaa")
    await services.close()

    services = build_services(settings)
    await services.start()
    env.app = create_app(settings, services=services)
    env.services = services
    try:
        await env.create_user("b@example.com", "Bbb Bbb")
        body = assert_success(
            await env.client("hamlet").get(
                "/events", {"queue_id": state["queue_id"], "last_event_id": -1}
            )
        )
        assert [e["person"]["full_name"] for e in body["events"]] == ["Aaa Aaa", "Bbb Bbb"]
        assert [e["id"] for e in body["events"]] == [0, 1]
    finally:
        await services.close()


async def test_events_arguments_from_the_query_or_a_form_body(env: TestEnv) -> None:
    """A request without a body has its arguments read from the query string alone
    (``api/direct.py``); arguments in a form body are read by ``read_arguments``. Both
    answer alike."""
    import httpx

    from tests.helpers import API, basic_auth

    hamlet = env.users["hamlet"]
    queue_id = (await register(env, hamlet))["queue_id"]
    headers = {"Authorization": basic_auth(hamlet.delivery_email, hamlet.api_key)}
    body = assert_success(
        await env.client("hamlet").get(
            "/events", {"queue_id": queue_id, "dont_block": True, "colour": "blue"}
        )
    )
    assert body["events"] == [] and body["ignored_parameters_unsupported"] == ["colour"]
    transport = httpx.ASGITransport(app=env.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
        response = await http.request(
            "GET",
            API + "/events",
            data={"queue_id": queue_id, "dont_block": "true", "colour": "blue"},
            headers=headers,
        )
        body = assert_success(response)
        assert body["events"] == [] and body["ignored_parameters_unsupported"] == ["colour"]
        # The first value of a repeated argument wins, as everywhere.
        response = await http.get(
            API + f"/events?queue_id={queue_id}&queue_id=nope&dont_block=true", headers=headers
        )
        assert assert_success(response)["queue_id"] == queue_id
        assert_error(
            await http.get(API + f"/events?queue_id={queue_id}&dont_block=maybe", headers=headers),
            "dont_block is not valid JSON",
        )


async def test_an_unexpected_error_in_a_poll_is_a_json_500(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The long-poll's own way in bypasses Starlette's error middleware: an unexpected
    error is still logged and answered with a JSON 500."""
    hamlet = env.users["hamlet"]
    queue_id = (await register(env, hamlet))["queue_id"]

    async def broken(*args: object, **kwargs: object) -> list[dict[str, object]]:
        raise RuntimeError("the bus broke")

    monkeypatch.setattr(env.services.bus, "get_events", broken)
    with caplog.at_level("ERROR", logger="hubbub"):
        response = await env.client("hamlet").get("/events", {"queue_id": queue_id})
    assert response.status_code == 500
    assert response.json() == {"result": "error", "msg": "Internal server error"}
    assert any(
        record.exc_info and "the bus broke" in str(record.exc_info[1]) for record in caplog.records
    )
