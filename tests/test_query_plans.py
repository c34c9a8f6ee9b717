"""Statements every request or every send runs must search an index, not read a table:
the login lookup by email across realms (migration 0013), a send's subscribers (by the
stream's index, unordered) and its realm's alert words (migration 0014); /register's
unread rows with their flags from the unread index (PostgreSQL, migration 0015) or the
user's range of the table (SQLite, migration 0016), and from the staged rows' user index
(migrations 0019 and 0021); a SQLite search's matches among the user's rows by the tables' keys;
a message with its reader's access and the newest message a user received, by keys."""

from __future__ import annotations

import re
from typing import Any

import sqlalchemy as sa

from hubbub.actions.message_flags import _flag_update
from hubbub.db.dialects import ids_argument, sqlite_staged, user_message_tables
from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.queries.alert_words import _REALM_ALERT_WORDS
from hubbub.queries.message_fetch import own_matches
from hubbub.queries.messages import _MESSAGE_WITH_ACCESS, _NEWEST_RECEIVED
from hubbub.queries.streams import _SUBSCRIBERS, get_subscriber_ids
from hubbub.queries.users import _LOGIN_CANDIDATES
from hubbub.register.message_state import _UNREAD_ROWS
from hubbub.search.sqlite import nearest_hits
from tests.helpers import TestEnv


async def _plan(db: Database, statement: sa.Select[Any]) -> str:
    async with db.read() as conn:
        sql = str(statement.compile(conn.sync_connection, compile_kwargs={"literal_binds": True}))
        if table := statement.get_execution_options().get(sqlite_staged.TABLE_OPTION):
            sql = sqlite_staged.on_table(sql, table)  # as SQLite's engine rewrites it
        return await _explain(db, conn, sql, ())


async def _plan_with(db: Database, statement: Any, params: dict[str, Any]) -> str:
    """The plan of a statement that takes no ``params()`` (an UPDATE), its parameters
    given to the driver as they would be."""
    async with db.read() as conn:
        compiled = statement.compile(conn.sync_connection)
        values = tuple(params[name] for name in compiled.positiontup)
        return await _explain(db, conn, str(compiled), values)


async def _explain(db: Database, conn: Any, sql: str, values: tuple[Any, ...]) -> str:
    if db.dialect_name == "postgresql":
        # A test database holds a handful of rows, for which reading them all is
        # cheapest; forbidding that shows which indexes the statement can use.
        await conn.execute(sa.text("SET enable_seqscan = off"))
        try:
            rows = await conn.exec_driver_sql(f"EXPLAIN {sql}", values)
            return "\n".join(row[0] for row in rows)
        finally:
            await conn.execute(sa.text("RESET enable_seqscan"))
    rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", values)
    return "\n".join(row[-1] for row in rows)


# SQLite's planner statistics of the benchmark's 1,000-user realm (``sqlite_stat1``, as
# its bounded ANALYZE wrote them): its choices on an empty database differ.
_SQLITE_STATISTICS = [
    ("subscription", "ix_subscription_stream_id", "5956 60"),
    ("subscription", "sqlite_autoindex_subscription_1", "5956 6 1"),
    ("user_profile", "sqlite_autoindex_user_profile_1", "1001 1"),
    ("user_message_rows", "user_message_rows", "19219636 10001 1"),
    ("user_message_rows", "ix_user_message_message_id", "21664800 36"),
]


async def _plans(database_url: str) -> dict[str, str]:
    db = Database(database_url)
    try:
        await upgrade(db)
        if db.is_sqlite:
            async with db.write() as conn:
                await conn.execute(sa.text("ANALYZE sqlite_schema"))  # makes sqlite_stat1
                for table, index, stat in _SQLITE_STATISTICS:
                    await conn.execute(
                        sa.text("INSERT INTO sqlite_stat1 VALUES (:t, :i, :s)"),
                        {"t": table, "i": index, "s": stat},
                    )
            await db.dispose()  # new connections load the statistics
        async with db.read() as conn:
            subscribers = _SUBSCRIBERS(conn).params(ids=ids_argument(conn, [3, 5]))
            newest = _NEWEST_RECEIVED(conn).params(user_id=5)
            flag_params = {"user_id": 5, "ids": ids_argument(conn, [7, 8, 9])}
            tables = user_message_tables(conn)
        return {
            **{
                f"flag update {table.name}": await _plan_with(
                    db, _flag_update(db.dialect_name, table, 1, True), flag_params
                )
                for table in tables
            },
            "login": await _plan(db, _LOGIN_CANDIDATES.params(login="someone@example.com")),
            "one message": await _plan(
                db, _MESSAGE_WITH_ACCESS.params(message_id=7, realm_id=2, user_id=5)
            ),
            "newest received": await _plan(db, newest),
            "subscribers": await _plan(db, subscribers),
            "alert words": await _plan(db, _REALM_ALERT_WORDS.params(realm_id=2)),
            # As it runs: on SQLite over both tables of the view (``over_user_message``).
            "unread": await _plan(db, db.dialect.over_tables(_UNREAD_ROWS).params(user_id=5)),
            "search matches": await _plan(
                db,
                own_matches(
                    5,
                    nearest_hits('"word"', above=None, below=None, newest_first=True, limit=9),
                ),
            )
            if db.is_sqlite
            else "",
        }
    finally:
        await db.dispose()


async def test_hot_statements_search_indexes(database_url: str) -> None:
    plans = await _plans(database_url)
    login = plans["login"]
    assert "ix_user_profile_email" in login, login
    assert "ix_user_profile_delivery_email" in login, login
    assert "Seq Scan on user_profile" not in login, login
    assert "SCAN user_profile" not in login, login
    # GET /messages/{id} (and every other check of a message's access, which reads fewer
    # columns the same way) and GET /users/me's newest message: each row by its key.
    # (SQLite's SCAN of a subquery reads the rows the subquery found.)
    for name in ("one message", "newest received"):
        plan = plans[name]
        assert "Seq Scan" not in plan and not re.search(r"SCAN (?!\(subquery)", plan), plan
    if database_url.startswith("sqlite"):
        key = "(user_profile_id=? AND message_id=?)"
        assert f"SEARCH user_message_rows USING PRIMARY KEY {key}" in plans["one message"]
    # Ordered by user, SQLite read every subscription in the (user, stream) index's order.
    subscribers = plans["subscribers"]
    assert "ix_subscription_stream_id" in subscribers, subscribers
    assert "SCAN subscription" not in subscribers, subscribers
    # Without the realm's index SQLite read every account and looked up each one's words.
    alert_words = plans["alert words"]
    assert "ix_alert_word_realm_id" in alert_words, alert_words
    assert "SCAN user_profile" not in alert_words, alert_words
    # The flags beside the key: no lookup of each unread row elsewhere. On PostgreSQL the
    # partial unread index carries them; on SQLite the table is keyed by (user, message)
    # (no rowid, migration 0016), so the user's rows are one range of its primary key.
    # On SQLite user_message is a view (migration 0019) and the statement runs over its
    # two tables in one (each aliased user_message): the staged rows' part reads the
    # user's entries of its own user index, flags included (the staged table's key
    # starts with the message).
    unread = plans["unread"]
    if database_url.startswith("sqlite"):
        assert unread.startswith("COMPOUND QUERY"), unread
        assert "SEARCH user_message USING PRIMARY KEY (user_profile_id=?)" in unread, unread
        own_index = "USING COVERING INDEX ix_user_message_staged_user (user_profile_id=?)"
        assert f"SEARCH user_message {own_index}" in unread, unread
    else:
        # The view's two tables (migration 0021): the unread index, and the staged rows'
        # user index.
        assert "ix_user_message_unread" in unread, unread
        assert "ix_user_message_staged_user" in unread, unread
    # A flag change (one statement built once, its ids one argument) finds each of the
    # user's rows by key, in each table that holds them: not every row of the messages
    # (the message index) nor every row of the user.
    flag_plans = {name: plan for name, plan in plans.items() if name.startswith("flag update")}
    assert flag_plans
    for name, plan in flag_plans.items():
        assert "Seq Scan" not in plan and "SCAN user_message" not in plan, (name, plan)
    if database_url.startswith("sqlite"):
        key = "(user_profile_id=? AND message_id=?)"
        rows = plans["flag update user_message_rows"]
        assert f"SEARCH user_message_rows USING PRIMARY KEY {key}" in rows, rows
        staged = plans["flag update user_message_staged"]
        assert f"USING COVERING INDEX ix_user_message_staged_user {key}" in staged, staged
    # Each of a search window's matches looked up in the user's own range of rows, not
    # across the (message, user) index (migration 0016).
    if database_url.startswith("sqlite"):
        matches = plans["search matches"]
        rows = "SEARCH user_message_rows USING PRIMARY KEY (user_profile_id=? AND message_id=?)"
        staged = "SEARCH user_message_staged USING COVERING INDEX ix_user_message_staged_user"
        assert rows in matches, matches
        assert f"{staged} (user_profile_id=? AND message_id=?)" in matches, matches


async def test_subscribers_come_in_user_order_whatever_the_rows_order(env: TestEnv) -> None:
    """The statement is unordered for the planner's sake; the lists are still by user id."""
    users = sorted(env.users.values(), key=lambda user: user.id, reverse=True)
    for user in users:  # rows stored newest user first
        stream = await env.subscribe(user, "Backwards")
    async with env.services.db.read() as conn:
        found = await get_subscriber_ids(conn, [stream.id])
    assert found == {stream.id: sorted(user.id for user in users if user.is_active)}
