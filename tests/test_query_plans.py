"""Every authenticated request looks its account up by email across realms: that lookup
must be an index search, not a read of every account (migration 0013)."""

from __future__ import annotations

import sqlalchemy as sa

from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.queries.users import _LOGIN_CANDIDATES


async def _plan(db: Database) -> str:
    statement = _LOGIN_CANDIDATES.params(login="someone@example.com")
    async with db.read() as conn:
        sql = str(statement.compile(conn.sync_connection, compile_kwargs={"literal_binds": True}))
        if db.dialect_name == "postgresql":
            # A test database holds a handful of accounts, for which reading them all is
            # cheapest; forbidding that shows which indexes the lookup can use.
            await conn.execute(sa.text("SET enable_seqscan = off"))
            try:
                rows = await conn.execute(sa.text(f"EXPLAIN {sql}"))
                return "\n".join(row[0] for row in rows)
            finally:
                await conn.execute(sa.text("RESET enable_seqscan"))
        rows = await conn.execute(sa.text(f"EXPLAIN QUERY PLAN {sql}"))
        return "\n".join(row[-1] for row in rows)


async def test_login_lookup_searches_both_email_indexes(database_url: str) -> None:
    db = Database(database_url)
    try:
        await upgrade(db)
        plan = await _plan(db)
    finally:
        await db.dispose()
    assert "ix_user_profile_email" in plan, plan
    assert "ix_user_profile_delivery_email" in plan, plan
    assert "Seq Scan on user_profile" not in plan, plan
    assert "SCAN user_profile" not in plan, plan
