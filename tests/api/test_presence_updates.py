"""Incremental presence (feature levels 263 and 288): update ids, ``last_update_id`` and
``history_limit_days`` on ``POST /users/me/presence``, ``presence_last_update_id`` and
``presence_history_limit_days`` on ``POST /register``, and the guarantee behind them: a
client that has seen update id N never misses a later change, with several writers and
with the answers a process keeps for a second."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.actions.presence import do_update_user_presence
from hubbub.clock import FakeClock
from hubbub.db.engine import Database
from hubbub.db.tables import presence_sequence, realm, user_presence, user_setting
from hubbub.queries import presence as presence_queries
from hubbub.queries.subscriber_cache import SubscriberCache
from hubbub.settings import Settings
from hubbub.transaction import Tx
from tests.helpers import TestEnv, assert_success, running_env
from tests.presence_helpers import START, ping

PRESENCE = "/users/me/presence"
DAY = 24 * 3600


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings, clock=FakeClock(START + 0.25)) as test_env:
        # polonius polls without ever being recorded (presence_enabled off), so that his
        # polls change nothing they report.
        async with test_env.services.db.write() as conn:
            await conn.execute(
                sa.insert(user_setting).values(
                    user_profile_id=test_env.users["polonius"].id,
                    settings='{"presence_enabled": false}',
                )
            )
        yield test_env


async def _poll(env: TestEnv, **params: Any) -> dict[str, Any]:
    return await ping(env, "polonius", **params)


def _id(env: TestEnv, user: str) -> str:
    return str(env.users[user].id)


async def _update_ids(env: TestEnv) -> dict[str, int]:
    names = {user.id: name for name, user in env.users.items()}
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(user_presence.c.user_profile_id, user_presence.c.last_update_id)
        )
        return {names[user_id]: update_id for user_id, update_id in rows}


async def _ping_elsewhere(env: TestEnv, user: str, log_time: int) -> None:
    """An "active" presence write by another server process: its own database handle,
    the same action, and no share in this process's kept answers."""
    other = Database(env.services.settings.database_url)
    try:
        await _write_with(other, env, user, log_time)
    finally:
        await other.dispose()


async def _write_with(db: Database, env: TestEnv, user: str, log_time: int = START) -> int:
    """An "active" report of ``user`` at ``log_time`` written through ``db``; its update id."""
    async with db.write() as conn:
        tx = Tx(conn, SubscriberCache())
        await do_update_user_presence(
            tx, env.realm, env.users[user], log_time, "active", now=float(log_time)
        )
    return tx.presence_writes[-1].update_id


async def test_each_write_takes_the_realms_next_id(env: TestEnv) -> None:
    await ping(env, "hamlet")
    await ping(env, "othello", "idle")
    assert await _update_ids(env) == {"hamlet": 1, "othello": 2}
    # A ping that rewrites nothing takes no id.
    await ping(env, "hamlet")
    assert await _update_ids(env) == {"hamlet": 1, "othello": 2}
    env.advance(60)
    await ping(env, "othello")
    assert await _update_ids(env) == {"hamlet": 1, "othello": 3}
    # Another realm counts on its own.
    other = await env.create_realm("other", "Other")
    stranger = await env.create_user("stranger@example.com", "Stranger", realm=other)
    assert_success(
        await env.client(stranger, host="other.localhost").post(PRESENCE, {"status": "active"})
    )
    async with env.services.db.read() as conn:
        counts = {
            realm_id: count for realm_id, count in await conn.execute(sa.select(presence_sequence))
        }
    assert counts == {env.realm.id: 3, other.id: 1}


async def test_last_update_id_answers_only_what_changed(env: TestEnv) -> None:
    # Nothing yet: -1 without an id, the client's own id with one.
    body = await _poll(env)
    assert (body["presences"], body["presence_last_update_id"]) == ({}, -1)
    assert (await _poll(env, last_update_id=7))["presence_last_update_id"] == 7
    await ping(env, "hamlet")
    await ping(env, "othello", "idle")
    # -1 asks for everything, and the answer is in the modern form even with
    # slim_presence false.
    body = await _poll(env, last_update_id=-1, slim_presence=False)
    assert body["presences"] == {
        _id(env, "hamlet"): {"active_timestamp": START, "idle_timestamp": START},
        _id(env, "othello"): {"active_timestamp": 0, "idle_timestamp": START},
    }
    assert body["presence_last_update_id"] == 2
    assert body["server_timestamp"] == START + 0.25
    # Nothing since 2.
    body = await _poll(env, last_update_id=2)
    assert (body["presences"], body["presence_last_update_id"]) == ({}, 2)
    # Only othello since 1.
    body = await _poll(env, last_update_id=1)
    assert list(body["presences"]) == [_id(env, "othello")]
    assert body["presence_last_update_id"] == 2
    env.advance(60)
    await ping(env, "hamlet", "idle")
    body = await _poll(env, last_update_id=2)
    assert body["presences"] == {
        _id(env, "hamlet"): {"active_timestamp": START, "idle_timestamp": START + 60}
    }
    assert body["presence_last_update_id"] == 3
    # Without last_update_id, slim_presence still chooses the form, and the answer still
    # names the newest id.
    body = await _poll(env)
    assert sorted(body["presences"]) == ["hamlet@example.com", "othello@example.com"]
    assert body["presence_last_update_id"] == 3
    body = await _poll(env, slim_presence=True)
    assert sorted(body["presences"]) == sorted([_id(env, "hamlet"), _id(env, "othello")])
    # A ping-only request answers nothing else.
    body = await _poll(env, last_update_id=2, ping_only=True)
    assert body == {"result": "success", "msg": ""}


async def test_history_limit_days(env: TestEnv) -> None:
    await ping(env, "hamlet")  # id 1, at START
    env.advance(3 * DAY)
    await ping(env, "othello")  # id 2, three days later
    ids = sorted([_id(env, "hamlet"), _id(env, "othello")])
    body = await _poll(env, last_update_id=-1)
    assert sorted(body["presences"]) == ids
    for params in ({"history_limit_days": 1}, {"history_limit_days": 1, "last_update_id": 0}):
        body = await _poll(env, slim_presence=True, **params)
        assert list(body["presences"]) == [_id(env, "othello")], params
        assert body["presence_last_update_id"] == 2
    body = await _poll(env, history_limit_days=4, last_update_id=-1)
    assert sorted(body["presences"]) == ids
    # 0 days: nothing at all, whatever the id.
    body = await _poll(env, history_limit_days=0)
    assert (body["presences"], body["presence_last_update_id"]) == ({}, -1)
    body = await _poll(env, history_limit_days=0, last_update_id=1)
    assert (body["presences"], body["presence_last_update_id"]) == ({}, 1)
    # A limit in the future reaches nobody; a huge one everybody.
    assert (await _poll(env, history_limit_days=-1))["presences"] == {}
    body = await _poll(env, history_limit_days=2**62, slim_presence=True)
    assert sorted(body["presences"]) == ids
    # Past the default two weeks only a positive id still reaches othello, whose write is
    # newer than it (Zulip ignores the limit then).
    env.advance(20 * DAY)
    assert (await _poll(env, last_update_id=-1))["presences"] == {}
    body = await _poll(env, last_update_id=1, history_limit_days=1)
    assert list(body["presences"]) == [_id(env, "othello")]
    assert body["presence_last_update_id"] == 2


async def test_realm_with_presence_disabled(env: TestEnv) -> None:
    await ping(env, "hamlet")
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.update(realm)
            .where(realm.c.id == env.realm.id)
            .values(settings='{"presence_disabled": true}')
        )
    # As Zulip's get_presences_for_realm: nothing, and -1 even when the client had an id.
    body = await _poll(env, last_update_id=1)
    assert (body["presences"], body["presence_last_update_id"]) == ({}, -1)
    state = assert_success(
        await env.client("polonius").post("/register", {"fetch_event_types": ["presence"]})
    )
    assert (state["presences"], state["presence_last_update_id"]) == ({}, -1)


async def test_realm_presence_has_no_update_id(env: TestEnv) -> None:
    await ping(env, "hamlet")
    body = assert_success(await env.client("iago").get("/realm/presence"))
    assert set(body) == {"result", "msg", "presences", "server_timestamp"}


async def test_register_sends_the_id_to_poll_with(env: TestEnv) -> None:
    async def register(**params: Any) -> dict[str, Any]:
        params = {"fetch_event_types": ["presence"], "slim_presence": True, **params}
        return assert_success(await env.client("polonius").post("/register", params))

    state = await register()
    assert (state["presences"], state["presence_last_update_id"]) == ({}, -1)
    await ping(env, "hamlet")
    env.advance(3 * DAY)
    await ping(env, "othello")
    state = await register()
    assert sorted(state["presences"]) == sorted([_id(env, "hamlet"), _id(env, "othello")])
    assert state["presence_last_update_id"] == 2
    state = await register(presence_history_limit_days=1)
    assert list(state["presences"]) == [_id(env, "othello")]
    assert state["presence_last_update_id"] == 2
    state = await register(presence_history_limit_days=0)
    assert (state["presences"], state["presence_last_update_id"]) == ({}, -1)
    # The id of the state is the one to poll with: only what changed after it comes.
    state = await register()
    env.advance(60)
    await ping(env, "hamlet", "idle")
    body = await _poll(env, last_update_id=state["presence_last_update_id"])
    assert list(body["presences"]) == [_id(env, "hamlet")]
    assert body["presence_last_update_id"] == 3


async def test_kept_answers_never_report_an_id_they_may_lack(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """This process keeps the realm's rows (``PresenceAnswers``) and takes its own writes
    into them at once; another process's write in between is missing from them until
    they are read again. An answer holding this process's newer write must then report
    an id below the missing one, so that the client asks again and gets it."""
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", 3600.0)
    await ping(env, "hamlet")  # 1
    body = await _poll(env, last_update_id=-1)
    assert body["presence_last_update_id"] == 1
    await _ping_elsewhere(env, "othello", START + 10)  # 2: not in the kept rows
    env.advance(60)
    await ping(env, "hamlet", "idle")  # 3: taken into the kept rows at once
    assert await _update_ids(env) == {"hamlet": 3, "othello": 2}
    body = await _poll(env, last_update_id=1)
    assert list(body["presences"]) == [_id(env, "hamlet")]
    assert body["presence_last_update_id"] == 1  # not 3, which would skip othello's 2
    body = await _poll(env, slim_presence=True)  # every recent user: the same holds
    assert list(body["presences"]) == [_id(env, "hamlet")]
    assert body["presence_last_update_id"] == 1
    # Once the rows are read again, the same question gets othello too.
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", -1.0)
    body = await _poll(env, last_update_id=1)
    assert sorted(body["presences"]) == sorted([_id(env, "hamlet"), _id(env, "othello")])
    assert body["presence_last_update_id"] == 3
    # Without writes elsewhere, the kept rows follow this process's writes exactly.
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", 3600.0)
    assert (await _poll(env, last_update_id=3))["presence_last_update_id"] == 3
    env.advance(60)
    await ping(env, "othello")  # 4
    body = await _poll(env, last_update_id=3)
    assert list(body["presences"]) == [_id(env, "othello")]
    assert body["presence_last_update_id"] == 4


async def test_no_update_is_missed_with_two_writers(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL, two server processes: othello's write takes its id and stays open;
    iago's starts meanwhile, and a client polls before and after both commit. Had iago's
    write taken the next id and committed first, the client would have been told that id
    and never asked for othello's smaller one. The realm's count makes iago's write wait
    for othello's commit instead, so the client gets both."""
    if env.services.db.dialect_name != "postgresql":
        pytest.skip("several writers at once: PostgreSQL only")
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", -1.0)
    await ping(env, "hamlet")  # 1
    first = Database(env.services.settings.database_url)
    second = Database(env.services.settings.database_url)
    polled: dict[str, Any] = {}
    try:
        async with first.write() as conn:
            tx = Tx(conn, SubscriberCache())
            await do_update_user_presence(
                tx, env.realm, env.users["othello"], START, "active", now=START
            )
            waiting = asyncio.create_task(_write_with(second, env, "iago"))
            await asyncio.sleep(0.3)
            blocked = not waiting.done()
            body = await _poll(env, last_update_id=1)
            polled.update(body["presences"])
            last_update_id = body["presence_last_update_id"]
        iago_id = await waiting
    finally:
        await first.dispose()
        await second.dispose()
    body = await _poll(env, last_update_id=last_update_id)
    polled.update(body["presences"])
    assert sorted(polled) == sorted([_id(env, "othello"), _id(env, "iago")])
    assert body["presence_last_update_id"] == iago_id == 3
    assert await _update_ids(env) == {"hamlet": 1, "othello": 2, "iago": 3}
    # iago's write waited for othello's commit, holding no id meanwhile.
    assert blocked


async def test_a_poller_misses_nothing_while_two_processes_write(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two other processes and this one write presence at once while a client polls with
    the id of each answer: what the client pieced together equals the rows at the end."""
    dialect = env.services.db.dialect_name
    # Kept answers expire quickly, so that polls see a mix of kept and fresh rows.
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", 0.02)
    rounds = 25 if dialect == "postgresql" else 8
    workers = [Database(env.services.settings.database_url) for _ in range(2)]
    writers = {0: ["hamlet", "othello"], 1: ["iago", "shiva"]}
    done = asyncio.Event()

    async def elsewhere(index: int) -> None:
        for step in range(rounds):
            for user in writers[index]:
                await _write_with(workers[index], env, user, START + 60 * (step + 1))
                await asyncio.sleep(0)

    async def here() -> None:
        user = env.users["desdemona"]
        for step in range(rounds):
            async with env.services.write() as tx:
                await do_update_user_presence(
                    tx, env.realm, user, START + 60 * (step + 1), "active", now=START
                )
            await asyncio.sleep(0)

    seen: dict[str, Any] = {}
    last_update_id = -1
    polls = 0

    async def poll() -> None:
        nonlocal last_update_id, polls
        polls += 1
        body = await _poll(env, last_update_id=last_update_id)
        assert body["presence_last_update_id"] >= last_update_id
        seen.update(body["presences"])
        last_update_id = body["presence_last_update_id"]

    async def poller() -> None:
        while not done.is_set():
            await poll()
            await asyncio.sleep(0.005)

    try:
        polling = asyncio.create_task(poller())
        await asyncio.gather(elsewhere(0), elsewhere(1), here())
        done.set()
        await polling
    finally:
        for db in workers:
            await db.dispose()
    assert polls > 3  # the polls came between the writes
    monkeypatch.setattr(presence_queries, "PRESENCE_ANSWER_SECONDS", -1.0)
    await poll()
    final = await _poll(env, last_update_id=-1, history_limit_days=10**6)
    assert len(final["presences"]) == 5
    assert seen == final["presences"]
    assert last_update_id == final["presence_last_update_id"] == 5 * rounds


async def _upgrade_numbers_existing_rows(url: str) -> None:
    """Migration 0026 on a database holding presence rows of two realms."""
    from alembic import command

    from hubbub.db.migrate import alembic_config, upgrade

    db = Database(url)
    try:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0025"))
            for realm_id in (1, 2):
                await conn.execute(
                    sa.text(
                        "INSERT INTO realm (id, string_id, name, date_created)"
                        " VALUES (:id, :s, 'Old', 0)"
                    ),
                    {"id": realm_id, "s": f"r{realm_id}"},
                )
            for user_id, realm_id in [(1, 1), (2, 2), (3, 1), (4, 1)]:
                await conn.execute(
                    sa.text(
                        "INSERT INTO user_profile (id, realm_id, email, delivery_email, full_name,"
                        " api_key, role, date_joined) VALUES (:id, :r, :e, :e, 'X', :k, 400, 0)"
                    ),
                    {"id": user_id, "r": realm_id, "e": f"u{user_id}@x.org", "k": f"k{user_id}"},
                )
                await conn.execute(
                    sa.text(
                        "INSERT INTO user_presence (user_profile_id, realm_id,"
                        " last_connected_time, last_active_time) VALUES (:id, :r, 5, 5)"
                    ),
                    {"id": user_id, "r": realm_id},
                )
        await upgrade(db)
        async with db.read() as conn:
            rows = await conn.execute(
                sa.select(user_presence.c.user_profile_id, user_presence.c.last_update_id)
            )
            numbered = dict(rows.all())
            counts: dict[int, int] = dict((await conn.execute(sa.select(presence_sequence))).all())
    finally:
        await db.dispose()
    # Within each realm 1, 2, ... in user id order; each count at its realm's last number.
    assert numbered == {1: 1, 3: 2, 4: 3, 2: 1}
    assert counts == {1: 3, 2: 1}


async def test_upgrade_numbers_existing_rows_sqlite(tmp_path: Any) -> None:
    await _upgrade_numbers_existing_rows(f"sqlite:///{tmp_path / 'old.db'}")


async def test_upgrade_numbers_existing_rows_postgresql(empty_postgres_url: str) -> None:
    await _upgrade_numbers_existing_rows(empty_postgres_url)
