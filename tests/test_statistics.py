"""Planner statistics: the periodic job gives SQLite the ``sqlite_stat1`` table it never
fills by itself (PostgreSQL's autovacuum keeps its own; the job is a no-op there), and
narrows stay right without any realm condition of their own; per-connection settings."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from hubbub.db.dialects import sqlite_staged
from tests.helpers import TestEnv, assert_success
from tests.messages_helpers import send_direct_message, send_stream_message


async def test_refresh_statistics(env: TestEnv) -> None:
    await env.subscribe("hamlet", "Denmark")
    for i in range(5):
        await send_stream_message(env, "hamlet", "Denmark", f"m{i}")
    await env.services.db.settle_staged()  # on SQLite, the user-major table has rows
    await send_stream_message(env, "hamlet", "Denmark", "staged")
    await env.services.db.refresh_statistics()
    if env.services.db.is_sqlite:
        async with env.services.db.read() as conn:
            stats = await conn.execute(sa.text("SELECT tbl, idx, stat FROM sqlite_stat1"))
            rows = [tuple(row) for row in stats]
        assert {"message", "user_message_rows"} <= {tbl for tbl, _, _ in rows}
        # The staged rows' statistics are pinned, whatever the table holds (migration 0019).
        staged = sorted(row for row in rows if row[0] == "user_message_staged")
        assert staged == sorted(sqlite_staged.STAGED_STATISTICS)
    # Refreshing again (the daily run) is harmless.
    await env.services.db.refresh_statistics()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_sqlite_statistics_leave_the_search_index_and_the_event_loop_alone(
    env: TestEnv,
) -> None:
    """ANALYZE covers hubbub's tables, not the full-text index's shadow tables (read only
    by key, and slow to analyze), and runs in the writer's thread, not inline on the
    event loop as the writer's other statements do."""
    await env.subscribe("hamlet", "Denmark")
    for i in range(3):
        await send_stream_message(env, "hamlet", "Denmark", f"search me {i}")
    async with env.services.db.write() as conn:
        raw = (await conn.get_raw_connection()).driver_connection
    assert raw is not None
    analyzed: list[tuple[str, int]] = []

    def trace(statement: str) -> None:
        if statement.startswith("ANALYZE"):
            analyzed.append((statement, threading.get_ident()))

    raw._connection.set_trace_callback(trace)
    try:
        await env.services.db.refresh_statistics()
    finally:
        raw._connection.set_trace_callback(None)
    expected = {'ANALYZE "message"', 'ANALYZE "user_message_rows"', 'ANALYZE "user_message_staged"'}
    assert expected <= {s for s, _ in analyzed}
    assert not [s for s, _ in analyzed if "fts" in s]
    assert {thread for _, thread in analyzed} == {raw._thread.ident}
    assert raw._thread.ident != threading.get_ident()
    async with env.services.db.read() as conn:
        tables = {r[0] for r in await conn.execute(sa.text("SELECT tbl FROM sqlite_stat1"))}
    assert "message" in tables
    assert not {t for t in tables if t.startswith("message_fts")}


async def test_direct_message_narrow_after_statistics(env: TestEnv) -> None:
    other_realm = await env.create_realm("zephyr", "Zephyr")
    zoe = await env.create_user("zoe@example.com", "Zoe", realm=other_realm)
    zed = await env.create_user("zed@example.com", "Zed", realm=other_realm)
    theirs = assert_success(
        await env.client(zoe, host="zephyr.localhost").post(
            "/messages", {"type": "direct", "to": [zed.id], "content": "elsewhere"}
        )
    )["id"]
    ours = await send_direct_message(env, "hamlet", ["othello"], "here")
    await env.services.db.refresh_statistics()
    params = {
        "anchor": "newest",
        "num_before": 10,
        "num_after": 0,
        "narrow": [{"operator": "dm", "operand": [env.users["othello"].id]}],
    }
    body = assert_success(await env.client("hamlet").get("/messages", params))
    assert [m["id"] for m in body["messages"]] == [ours]
    body = assert_success(await env.client("hamlet").get("/messages", {**params, "narrow": []}))
    assert theirs not in [m["id"] for m in body["messages"]]


async def test_postgresql_connections_do_not_jit_compile(env: TestEnv) -> None:
    """JIT compilation cost more than running any query PostgreSQL estimated as
    expensive (a user's rows of a large user_message table), which an index answers at
    once."""
    async with env.services.db.read() as conn:
        if env.services.db.is_sqlite:
            assert (await conn.execute(sa.text("PRAGMA journal_mode"))).scalar() == "wal"
        else:
            assert (await conn.execute(sa.text("SHOW jit"))).scalar() == "off"
