"""Staged user_message rows (migrations 0019 and 0021, ``db/dialects/sqlite_staged.py``
and ``postgresql.py``): a send's rows wait in ``user_message_staged`` until the server
moves them into ``user_message_rows``; reads see both through the ``user_message`` view,
and every write reaches a row wherever it is. On both databases, but for SQLite's own
ways of moving (its writer's thread and lock) and of reading (a statement per table)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.db.dialects import STAGED_USERS, postgresql, sqlite, sqlite_staged
from hubbub.db.tables import user_message
from hubbub.queries.messages import HISTORICAL, READ, STARRED
from hubbub.workers.periodic import start_background_jobs
from tests.events.verify import register
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import message_flags, send_stream_message


async def _where(env: TestEnv, message_id: int) -> dict[str, int]:
    """How many of the message's rows each table holds."""
    counts = {}
    async with env.services.db.read() as conn:
        for table in ("user_message_rows", "user_message_staged"):
            counts[table] = (
                await conn.execute(
                    sa.text(f"SELECT count(*) FROM {table} WHERE message_id = :m"),
                    {"m": message_id},
                )
            ).scalar_one()
    return counts


async def _pairs(env: TestEnv, message_id: int) -> list[int]:
    """The users of the message's rows, once per row (a pair in both tables shows twice)."""
    async with env.services.db.read() as conn:
        rows = await conn.execute(
            sa.select(user_message.c.user_profile_id).where(user_message.c.message_id == message_id)
        )
        return sorted(rows.scalars())


async def _settle(env: TestEnv) -> int:
    return await env.services.db.settle_staged()


async def _flags(env: TestEnv, user: str, message_id: int) -> list[str]:
    body = assert_success(await env.client(user).get(f"/messages/{message_id}"))
    flags: list[str] = body["message"]["flags"]
    return flags


def _sqlite(env: TestEnv) -> bool:
    return env.services.db.is_sqlite


def _mover(env: TestEnv) -> Any:
    """The module that moves staged rows on the test's database."""
    return sqlite_staged if _sqlite(env) else postgresql


async def test_a_send_is_staged_and_settled_with_its_flags(env: TestEnv) -> None:
    for name in ("hamlet", "othello", "iago"):
        await env.subscribe(name, "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "hi @**Othello**")
    before = await message_flags(env, mid)
    state = await register(env, env.users["othello"])
    assert await _where(env, mid) == {"user_message_rows": 0, "user_message_staged": 3}
    assert await _settle(env) == 3
    assert await _where(env, mid) == {"user_message_rows": 3, "user_message_staged": 0}
    # Reads see the same rows, flags and unread state before and after.
    assert await message_flags(env, mid) == before
    assert await _flags(env, "othello", mid) == ["mentioned"]
    again = await register(env, env.users["othello"])
    assert again["unread_msgs"] == state["unread_msgs"]
    assert again["unread_msgs"]["mentions"] == [mid]
    assert await _settle(env) == 0


async def _settled_and_staged(env: TestEnv) -> tuple[int, int]:
    """Two messages from hamlet to othello in Denmark: the first's rows moved into
    user_message_rows, the second's staged."""
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    settled = await send_stream_message(env, "hamlet", "Denmark", "one")
    await _settle(env)
    staged = await send_stream_message(env, "hamlet", "Denmark", "two")
    return settled, staged


async def test_flags_change_on_staged_and_settled_rows(env: TestEnv) -> None:
    settled, staged = await _settled_and_staged(env)
    othello = env.client("othello")
    ids = [settled, staged]
    for op in ("add", "remove", "add"):
        body = assert_success(
            await othello.post("/messages/flags", {"messages": ids, "op": op, "flag": "starred"})
        )
        assert body["messages"] == ids
    assert await _flags(env, "othello", staged) == ["starred"]
    # Marking everything read reaches both tables, and counts each row once.
    body = assert_success(await othello.post("/mark_all_as_read"))
    assert body["complete"] is True
    assert await _flags(env, "othello", staged) == ["read", "starred"]
    assert await _flags(env, "othello", settled) == ["read", "starred"]
    await _settle(env)
    assert await _flags(env, "othello", staged) == ["read", "starred"]
    state = await register(env, env.users["othello"])
    assert state["starred_messages"] == ids
    assert state["unread_msgs"]["count"] == 0


async def test_marking_a_stream_read_reaches_staged_rows(env: TestEnv) -> None:
    denmark = await env.subscribe("othello", "Denmark")
    await env.subscribe("hamlet", "Denmark")
    settled = await send_stream_message(env, "hamlet", "Denmark", "one")
    await _settle(env)
    staged = await send_stream_message(env, "hamlet", "Denmark", "two")
    assert_success(
        await env.client("othello").post("/mark_stream_as_read", {"stream_id": denmark.id})
    )
    for mid in (settled, staged):
        assert await _flags(env, "othello", mid) == ["read"]


async def test_deleting_a_message_deletes_its_rows_in_both_tables(env: TestEnv) -> None:
    settled, staged = await _settled_and_staged(env)
    for mid in (settled, staged):
        assert_success(await env.client("iago").delete(f"/messages/{mid}"))
        assert await _pairs(env, mid) == []
        assert await _where(env, mid) == {"user_message_rows": 0, "user_message_staged": 0}


async def test_rows_added_beside_staged_ones_are_not_doubled(env: TestEnv) -> None:
    """A move to a stream without shared history gives its subscribers rows; a reaction
    or a flag change gives a reader a historical one. Each pair keeps one row."""
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    protected = await env.subscribe("hamlet", "Protected", invite_only=True)
    await env.subscribe("othello", "Protected")
    await env.subscribe("iago", "Protected")
    mid = await send_stream_message(env, "hamlet", "Denmark", "moving")
    assert_success(
        await env.client("hamlet").patch(f"/messages/{mid}", {"stream_id": protected.id})
    )
    users = env.users
    assert await _pairs(env, mid) == sorted(users[n].id for n in ("hamlet", "othello", "iago"))
    flags = await message_flags(env, mid)
    assert flags[users["iago"].id] == READ and not flags[users["othello"].id] & READ
    # A reader of a public stream with no row: a reaction, then a flag.
    public = await send_stream_message(env, "hamlet", "Denmark", "public")
    assert_success(
        await env.client("iago").post(f"/messages/{public}/reactions", {"emoji_name": "smile"})
    )
    assert_success(
        await env.client("shiva").post(
            "/messages/flags", {"messages": [public], "op": "add", "flag": "starred"}
        )
    )
    ids = [users[n].id for n in ("hamlet", "othello", "iago", "shiva")]
    assert await _pairs(env, public) == sorted(ids)
    assert (await message_flags(env, public))[users["shiva"].id] == READ | HISTORICAL | STARRED
    await _settle(env)
    assert await _pairs(env, public) == sorted(ids)
    assert await _pairs(env, mid) == sorted(users[n].id for n in ("hamlet", "othello", "iago"))


async def test_settling_goes_in_slices_and_leaves_newer_rows(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("hamlet", "othello", "iago", "shiva"):
        await env.subscribe(name, "Denmark")
    first = await send_stream_message(env, "hamlet", "Denmark", "one")
    monkeypatch.setattr(_mover(env), "SETTLE_USERS_PER_TRANSACTION", 1)
    db = env.services.db
    real_write = db.write
    writes = 0
    later: list[int] = []

    @asynccontextmanager
    async def write_then_send(*, background: bool = False) -> AsyncIterator[Any]:
        # After the move's first slice, a send: its rows wait for the next move.
        nonlocal writes
        writes += 1
        async with real_write(background=background) as conn:
            yield conn
        if writes == 1:
            later.append(await send_stream_message(env, "othello", "Denmark", "two"))

    monkeypatch.setattr(db, "write", write_then_send)
    assert await _settle(env) == 4
    assert writes == 4 + 1  # a transaction a user, and the send's
    assert await _where(env, first) == {"user_message_rows": 4, "user_message_staged": 0}
    assert await _where(env, later[0]) == {"user_message_rows": 0, "user_message_staged": 4}
    assert await _pairs(env, later[0]) == sorted(
        env.users[n].id for n in ("hamlet", "othello", "iago", "shiva")
    )
    assert await _settle(env) == 4
    assert await _where(env, later[0]) == {"user_message_rows": 4, "user_message_staged": 0}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_slice_moves_and_commits_in_one_trip_to_the_writers_thread(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each trip to the writer's thread costs the slice a turn of the event loop to come
    back, with the single writer held: the move's statements and its COMMIT go in one."""
    for name in ("hamlet", "othello", "iago", "shiva"):
        await env.subscribe(name, "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    monkeypatch.setattr(sqlite_staged, "SETTLE_USERS_PER_TRANSACTION", 2)
    trips = 0
    real_on_thread = sqlite._Connection._on_thread

    async def counted(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal trips
        trips += 1
        return await real_on_thread(self, fn, *args, **kwargs)

    monkeypatch.setattr(sqlite._Connection, "_on_thread", counted)
    assert await _settle(env) == 4
    assert trips == 2  # two slices of two users
    # Committed: another connection sees the rows moved.
    assert await _where(env, mid) == {"user_message_rows": 4, "user_message_staged": 0}


async def test_a_row_in_both_tables_is_settled_not_stuck(env: TestEnv) -> None:
    """Should a pair ever be in both tables, the move keeps the staged flags instead of
    failing on the key, which would leave every later row staged."""
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    hamlet = env.users["hamlet"].id
    async with env.services.db.write() as conn:
        await conn.execute(
            sa.text("INSERT INTO user_message_rows VALUES (:u, :m, :f)"),
            {"u": hamlet, "m": mid, "f": STARRED},
        )
    assert await _settle(env) == 1
    assert await _pairs(env, mid) == [hamlet]
    assert (await message_flags(env, mid))[hamlet] == 0


async def test_a_server_settles_in_the_background(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert env.services.db.settle_interval == 1.0
    monkeypatch.setattr(_mover(env), "SETTLE_INTERVAL_SECONDS", 0.05)
    monkeypatch.setattr(env.services.db.dialect, "SETTLE_INTERVAL_SECONDS", 0.05)
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    tasks = start_background_jobs(env.services)
    try:
        for _ in range(100):
            if (await _where(env, mid))["user_message_staged"] == 0:
                break
            await asyncio.sleep(0.05)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert await _where(env, mid) == {"user_message_rows": 1, "user_message_staged": 0}


async def _page(env: TestEnv, user: str, **params: Any) -> list[tuple[int, list[str]]]:
    body = assert_success(await env.client(user).get("/messages", params))
    return [(m["id"], m["flags"]) for m in body["messages"]]


async def test_reads_put_settled_and_staged_rows_together(env: TestEnv) -> None:
    """Pages, the first unread message, a stream's history, /register's state and a
    private stream's topics, with a user's rows in both tables."""
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    secret = await env.subscribe("hamlet", "Secret", invite_only=True)
    await env.subscribe("othello", "Secret")
    # Before iago subscribes: history for him, no row.
    early = await send_stream_message(env, "hamlet", "Denmark", "early", "t0")
    await env.subscribe("iago", "Denmark")
    old = [
        await send_stream_message(env, "hamlet", "Denmark", f"old {i}", f"t{i}") for i in range(3)
    ]
    old_secret = await send_stream_message(env, "hamlet", "Secret", "s1", "topic a")
    await _settle(env)
    new = [
        await send_stream_message(env, "hamlet", "Denmark", f"new {i}", f"t{i}") for i in range(3)
    ]
    new_secret = await send_stream_message(env, "hamlet", "Secret", "s2", "topic b")
    othello = env.client("othello")
    assert_success(
        await othello.post(
            "/messages/flags", {"messages": [old[2], new[1]], "op": "add", "flag": "starred"}
        )
    )
    assert_success(
        await othello.post(
            "/messages/flags", {"messages": [early, *old[:2]], "op": "add", "flag": "read"}
        )
    )
    assert await _where(env, old[0]) == {"user_message_rows": 3, "user_message_staged": 0}
    assert await _where(env, new[0]) == {"user_message_rows": 0, "user_message_staged": 3}
    # A page across both tables, newest first and oldest first, in id order.
    denmark = [{"operator": "stream", "operand": "Denmark"}]
    everything = old + new
    page = await _page(
        env, "othello", anchor="newest", num_before=4, num_after=0, narrow=json.dumps(denmark)
    )
    assert [mid for mid, _ in page] == everything[-4:]
    assert dict(page)[old[2]] == ["starred"] and dict(page)[new[1]] == ["starred"]
    page = await _page(
        env, "othello", anchor=old[1], num_before=0, num_after=3, narrow=json.dumps(denmark)
    )
    assert [mid for mid, _ in page] == everything[1:5]
    # The first unread message, then is:starred and is:unread (flag-only narrows).
    body = assert_success(
        await othello.get("/messages", {"anchor": "first_unread", "num_before": 0, "num_after": 1})
    )
    assert body["anchor"] == old[2]
    starred = json.dumps([{"operator": "is", "operand": "starred"}])
    page = await _page(env, "othello", anchor="newest", num_before=10, num_after=0, narrow=starred)
    assert [mid for mid, _ in page] == [old[2], new[1]]
    unread = json.dumps([{"operator": "is", "operand": "unread"}])
    page = await _page(env, "othello", anchor="oldest", num_before=0, num_after=10, narrow=unread)
    assert [mid for mid, _ in page] == [old[2], old_secret, *new, new_secret]
    # Searches: matches in either table (a search reads the staged table only for a user
    # with rows there).
    for word, found in (("new", new), ("old", old)):
        search = json.dumps([{"operator": "search", "operand": word}])
        page = await _page(
            env, "othello", anchor="newest", num_before=10, num_after=0, narrow=search
        )
        assert [mid for mid, _ in page] == found
    # Stream history: iago has no row for the early message, rows in both tables after.
    page = await _page(
        env, "iago", anchor="oldest", num_before=0, num_after=10, narrow=json.dumps(denmark)
    )
    assert [mid for mid, _ in page] == [early, *everything]
    assert dict(page)[early] == ["read", "historical"] and dict(page)[new[0]] == []
    # /register, and a private stream's topics (no shared history: the user's rows).
    state = await register(env, env.users["othello"])
    assert state["max_message_id"] == new_secret
    assert state["starred_messages"] == [old[2], new[1]]
    assert state["unread_msgs"]["count"] == 6
    topics = assert_success(await othello.get(f"/users/me/{secret.id}/topics"))["topics"]
    assert [(t["name"], t["max_id"]) for t in topics] == [
        ("topic b", new_secret),
        ("topic a", old_secret),
    ]


def test_a_statement_over_one_table_renames_the_view_there() -> None:
    sql = (
        "SELECT message.id, user_message.flags FROM message JOIN user_message ON"
        " user_message.message_id = message.id WHERE message.id IN"
        " (SELECT own.message_id FROM user_message AS own WHERE own.user_profile_id = ?)"
    )
    assert sqlite_staged.on_table(sql, "user_message_staged") == (
        "SELECT message.id, user_message.flags FROM message JOIN user_message_staged AS"
        " user_message ON user_message.message_id = message.id WHERE message.id IN"
        " (SELECT own.message_id FROM user_message_staged AS own WHERE own.user_profile_id = ?)"
    )


def test_a_statement_over_both_tables_is_one_union_with_its_parameters_twice() -> None:
    sql = (
        "SELECT max(user_message.message_id) FROM user_message"
        " WHERE user_message.user_profile_id = ?"
    )
    assert sqlite_staged.on_table(sql, sqlite_staged.BOTH_TABLES) == (
        "SELECT * FROM (SELECT max(user_message.message_id) FROM user_message_rows AS"
        " user_message WHERE user_message.user_profile_id = ?) UNION ALL SELECT * FROM"
        " (SELECT max(user_message.message_id) FROM user_message_staged AS user_message"
        " WHERE user_message.user_profile_id = ?)"
    )
    assert sqlite_staged.doubled((7, "x")) == (7, "x", 7, "x")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_the_settle_and_the_checkpoint_let_a_waiting_send_go_first(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A settle slice and the checkpoint's held pass are background writes
    (``db/writer_lock.py``): a send that queued for the writer after them still takes it
    before them."""
    await env.subscribe("hamlet", "Denmark")
    db = env.services.db
    await db.checkpoint()  # this process now checkpoints (a write of its own, once)
    monkeypatch.setattr(sqlite, "CHECKPOINT_RESTART_FRAMES", 1)
    order: list[str] = []
    real_pass = sqlite._checkpoint_pass
    passes = 0

    async def checkpoint_pass(path: str) -> int:
        nonlocal passes
        passes += 1
        if passes == 2:
            order.append("checkpoint")
        return await real_pass(path)

    monkeypatch.setattr(sqlite, "_checkpoint_pass", checkpoint_pass)
    mid = await send_stream_message(env, "hamlet", "Denmark", "staged")

    async def send() -> None:
        await send_stream_message(env, "hamlet", "Denmark", "waiting")
        order.append("send")

    async def settle() -> None:
        assert await _settle(env) == 1
        order.append("settle")

    lock = db._write_lock
    assert lock is not None
    await lock.acquire()
    jobs = [asyncio.create_task(settle()), asyncio.create_task(db.checkpoint())]
    for _ in range(1000):
        if len(lock._background) == 2:  # both queued for the writer
            break
        await asyncio.sleep(0.001)
    assert len(lock._background) == 2  # else the send could go first by coming first
    sending = asyncio.create_task(send())
    for _ in range(1000):
        if lock._requests:  # the send's write queued behind them
            break
        await asyncio.sleep(0.001)
    assert len(lock._requests) == 1
    lock.release()
    await asyncio.gather(sending, *jobs)
    assert order[0] == "send"
    assert sorted(order[1:]) == ["checkpoint", "settle"]
    assert await _where(env, mid) == {"user_message_rows": 1, "user_message_staged": 0}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_sends_message_and_rows_skip_sqlalchemys_execution(env: TestEnv) -> None:
    """On SQLite the message's INSERT and its staged rows go to the writer's driver
    connection directly (``sqlite.insert_message``): SQLAlchemy's execution of them cost
    the single writer more than SQLite's own work. What they write is the same; a
    constraint's failure is still SQLAlchemy's IntegrityError."""
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    executed: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        executed.append(statement)

    engine = env.services.db.write_engine.sync_engine
    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        mid = await send_stream_message(env, "hamlet", "Denmark", "straight to the driver")
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    assert executed  # the send's other statements still go through SQLAlchemy
    assert not [sql for sql in executed if "INTO message " in sql or "user_message_staged" in sql]
    assert await _where(env, mid) == {"user_message_rows": 0, "user_message_staged": 2}
    body = assert_success(await env.client("othello").get(f"/messages/{mid}"))
    assert body["message"]["content"] == "<p>straight to the driver</p>"
    assert body["message"]["flags"] == []
    values = {
        "realm_id": 999_999,  # no such realm
        "sender_id": env.users["hamlet"].id,
        "recipient_id": 1,
        "topic": "t",
        "content": "c",
        "rendered_content": "<p>c</p>",
        "date_sent": 0.0,
        "sending_client": "test",
    }
    count = sa.text("SELECT count(*) FROM message")
    async with env.services.db.read() as conn:
        before = (await conn.execute(count)).scalar_one()
    with pytest.raises(sa.exc.IntegrityError):
        async with env.services.db.write() as conn:
            await sqlite.insert_message(conn, values, {env.users["hamlet"].id: 0})
    async with env.services.db.read() as conn:
        assert (await conn.execute(count)).scalar_one() == before  # it left nothing


@asynccontextmanager
async def _moving(env: TestEnv) -> AsyncIterator[None]:
    """PostgreSQL: every staged row taken by a move that has not committed yet (another
    worker's, say); it commits when the block ends."""
    async with env.services.db.engine.connect() as conn, conn.begin():
        users = [row[0] for row in await conn.exec_driver_sql(STAGED_USERS)]
        moving = await conn.exec_driver_sql(
            postgresql._MOVE_USERS, (users[0], users[-1], 2**31 - 1)
        )
        assert moving.rowcount > 0
        yield


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_flag_change_during_a_move_reaches_the_moved_row(env: TestEnv) -> None:
    """The flag change's statement over the staged table waits for the move, skips the
    row it took, and the next statement, over the moved rows, changes it: run over the
    moved rows first, it would have found the row in neither table."""
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    change = {"messages": [mid], "op": "add", "flag": "starred"}
    async with _moving(env):
        starring = asyncio.create_task(env.client("othello").post("/messages/flags", change))
        await asyncio.sleep(0.3)
        assert not starring.done()  # waiting for the move's row lock
    body = assert_success(await starring)
    assert body["messages"] == [mid]
    assert await _where(env, mid) == {"user_message_rows": 2, "user_message_staged": 0}
    assert await _flags(env, "othello", mid) == ["starred"]


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_deletion_during_a_move_deletes_the_moved_rows(env: TestEnv) -> None:
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    async with _moving(env):
        deleting = asyncio.create_task(env.client("iago").delete(f"/messages/{mid}"))
        await asyncio.sleep(0.3)
        assert not deleting.done()
    assert_success(await deleting)
    assert await _where(env, mid) == {"user_message_rows": 0, "user_message_staged": 0}


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_one_worker_at_a_time_moves_the_staged_rows(env: TestEnv) -> None:
    """While a worker holds the move's advisory lock, another's move does nothing."""
    await env.subscribe("hamlet", "Denmark")
    mid = await send_stream_message(env, "hamlet", "Denmark", "one")
    async with env.services.db.engine.connect() as other_worker:
        await other_worker.exec_driver_sql(
            "SELECT pg_advisory_lock($1)", (postgresql._SETTLE_LOCK,)
        )
        assert await _settle(env) == 0
        assert await _where(env, mid) == {"user_message_rows": 0, "user_message_staged": 1}
        await other_worker.exec_driver_sql(
            "SELECT pg_advisory_unlock($1)", (postgresql._SETTLE_LOCK,)
        )
        await other_worker.commit()
    assert await _settle(env) == 1
    assert await _where(env, mid) == {"user_message_rows": 1, "user_message_staged": 0}


@asynccontextmanager
async def _settle_pass(env: TestEnv) -> AsyncIterator[None]:
    """PostgreSQL: a move of staged rows under way in another worker (its lock held)."""
    async with env.services.db.engine.connect() as conn, conn.begin():
        taken = await conn.exec_driver_sql(
            "SELECT pg_try_advisory_xact_lock($1)", (postgresql._SETTLE_LOCK,)
        )
        assert taken.scalar()
        yield


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_topics_deletion_and_a_move_of_staged_rows_take_turns(env: TestEnv) -> None:
    """A move locks staged rows user by user, a deletion of several messages message by
    message: run together, each could hold a row the other waits for (a deadlock that
    PostgreSQL ends after a second by failing one). The deletion waits for a move under
    way, and a move finds the deletion's hold and skips its turn."""
    denmark = await env.subscribe("hamlet", "Denmark")
    await env.subscribe("othello", "Denmark")
    ids = [await send_stream_message(env, "hamlet", "Denmark", f"m{i}", "doomed") for i in range(3)]
    path = f"/streams/{denmark.id}/delete_topic"
    async with _settle_pass(env):
        deleting = asyncio.create_task(env.client("iago").post(path, {"topic_name": "doomed"}))
        await asyncio.sleep(0.3)
        assert not deleting.done()  # waiting for the move under way
    assert_success(await deleting)
    for mid in ids:
        assert await _where(env, mid) == {"user_message_rows": 0, "user_message_staged": 0}
    # The other way round: a transaction holding the moves off, and a move meanwhile.
    mid = await send_stream_message(env, "hamlet", "Denmark", "kept")
    async with env.services.db.write() as conn:
        await postgresql.hold_off_settling(conn)
        assert await _settle(env) == 0
    assert await _settle(env) == 2
    assert await _where(env, mid) == {"user_message_rows": 2, "user_message_staged": 0}


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_move_between_streams_waits_for_a_move_of_staged_rows(env: TestEnv) -> None:
    """Moving a topic to a private stream adds and deletes several messages' rows,
    message by message: it waits for a move of staged rows under way, as a deletion does."""
    for name in ("hamlet", "othello"):
        await env.subscribe(name, "Denmark")
    secret = await env.subscribe("hamlet", "Secret", invite_only=True)
    ids = [await send_stream_message(env, "hamlet", "Denmark", f"m{i}", "moving") for i in range(3)]
    change = {"stream_id": secret.id, "propagate_mode": "change_all"}
    async with _settle_pass(env):
        moving = asyncio.create_task(env.client("hamlet").patch(f"/messages/{ids[0]}", change))
        await asyncio.sleep(0.3)
        assert not moving.done()  # waiting for the move of staged rows
    assert_success(await moving)
    hamlet = env.users["hamlet"].id
    for mid in ids:
        assert await _pairs(env, mid) == [hamlet]  # othello lost access, and his rows
