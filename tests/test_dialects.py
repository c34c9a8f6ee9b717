"""Per-dialect helpers of ``db/dialects`` that queries build on, on both databases."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from hubbub.db.dialects import for_name, ids_argument
from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.db.tables import realm, user_profile
from tests.helpers import TestEnv


async def test_in_ids_matches_exactly_the_given_ids(env: TestEnv) -> None:
    ids = sorted(user.id for user in env.users.values())
    wanted = [ids[0], ids[-1], max(ids) + 1000]  # one that matches nothing
    async with env.services.db.read() as conn:
        in_ids = for_name(conn.dialect.name).in_ids
        statement = sa.select(user_profile.c.id).where(in_ids(user_profile.c.id, "ids"))

        async def matching(given: list[int]) -> list[int]:
            rows = await conn.execute(statement, {"ids": ids_argument(conn, given)})
            return sorted(rows.scalars())

        assert await matching(wanted) == [ids[0], ids[-1]]
        assert await matching([]) == []
        # A long list (the size of a big stream's subscribers) is one argument.
        assert await matching(list(range(-2000, 0)) + ids) == ids


# PostgreSQL's variant of the ``database_url`` fixture alone: SQLite has no server to end
# a session.
@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
async def test_a_connection_the_server_ended_is_replaced(database_url: str) -> None:
    """PostgreSQL: the pool pings no connection before use (three round trips each);
    one whose session the server ended, as a restart does, is refused at checkout and
    replaced, so the next request does not fail."""
    db = Database(database_url)
    try:
        async with db.read() as conn:
            pid = await conn.scalar(sa.text("SELECT pg_backend_pid()"))
        async with db.read() as conn:
            # The pool hands back its one idle connection.
            assert await conn.scalar(sa.text("SELECT pg_backend_pid()")) == pid
        # The server ends that session while it is idle in the pool.
        other = Database(database_url)
        try:
            async with other.read() as conn:
                await conn.execute(sa.text(f"SELECT pg_terminate_backend({pid})"))
                gone = sa.text(f"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = {pid}")
                for _ in range(100):  # the session ends a moment after the signal
                    if await conn.scalar(gone):
                        break
                    await asyncio.sleep(0.05)
        finally:
            await other.dispose()
        # Let the event loop see the closed socket, as it would between two requests.
        await asyncio.sleep(0.2)
        async with db.read() as conn:
            assert await conn.scalar(sa.text("SELECT pg_backend_pid()")) != pid
    finally:
        await db.dispose()


async def test_reads_see_what_was_committed_and_run_no_transaction(database_url: str) -> None:
    """PostgreSQL reads run without BEGIN (each statement its own snapshot, as READ
    COMMITTED gives anyway); SQLite's read is one snapshot transaction."""
    db = Database(database_url)
    try:
        await upgrade(db)
        async with db.read() as conn:
            before = await conn.scalar(sa.select(sa.func.count()).select_from(realm))
            assert before is not None
            async with db.write() as writer:
                await writer.execute(
                    sa.insert(realm).values(string_id="snap", name="Snap", date_created=0)
                )
            after = await conn.scalar(sa.select(sa.func.count()).select_from(realm))
            if db.is_sqlite:
                assert after == before
            else:
                assert after == before + 1
                # Each statement is a transaction of its own: two get two ids.
                first = await conn.scalar(sa.text("SELECT txid_current()"))
                assert await conn.scalar(sa.text("SELECT txid_current()")) != first
    finally:
        await db.dispose()
