"""Migrations: they build exactly the schema ``db/tables.py`` declares, and upgrading an
existing database gives its realms their system groups."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from hubbub.db.engine import Database
from hubbub.db.migrate import alembic_config, upgrade
from hubbub.db.tables import metadata, stored_tables


def _not_search(obj: Any, name: str | None, type_: str, reflected: bool, other: Any) -> bool:
    """Full-text search objects are dialect-specific and not in tables.py (migration 0006):
    the FTS5 table with its shadow tables on SQLite, the tsvector column and index on
    PostgreSQL."""
    return not (name or "").startswith(("message_fts", "search_tsvector", "ix_message_search"))


def _for_dialect(dialect: str) -> Any:
    """What to compare: not the search objects, nor what tables.py declares for another
    dialect only (``ddl_if``, e.g. user_message's foreign keys, SQLite only)."""

    def include(obj: Any, name: str | None, type_: str, reflected: bool, other: Any) -> bool:
        ddl_if = None if reflected else getattr(obj, "_ddl_if", None)
        if ddl_if is not None and ddl_if.dialect not in (None, dialect):
            return False
        return _not_search(obj, name, type_, reflected, other)

    return include


def _declared(dialect: str) -> sa.MetaData:
    """tables.py's schema as ``dialect`` holds it: ``user_message`` is a view of two tables
    declared apart (migrations 0019 and 0021)."""
    declared = sa.MetaData(naming_convention=metadata.naming_convention)
    for table in stored_tables(dialect):
        table.to_metadata(declared)
    return declared


def _diff(connection: sa.Connection) -> list[Any]:
    dialect = connection.dialect.name
    with warnings.catch_warnings():
        # Expression indexes cannot be reflected on SQLite; alembic warns and skips them.
        warnings.simplefilter("ignore")
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_object": _for_dialect(dialect)}
        )
        return list(compare_metadata(context, _declared(dialect)))


def _user_message_references(connection: sa.Connection) -> list[str]:
    references = sa.inspect(connection).get_foreign_keys("user_message_rows")
    return sorted(fk["referred_table"] for fk in references)


def _user_statistics_target(connection: sa.Connection) -> int | None:
    """PostgreSQL: the planner statistics' target of user_message.user_profile_id."""
    if connection.dialect.name != "postgresql":
        return None
    query = sa.text(
        "SELECT attstattarget FROM pg_attribute "
        "WHERE attrelid = 'user_message_rows'::regclass AND attname = 'user_profile_id'"
    )
    return int(connection.execute(query).scalar_one())


async def test_migrations_match_the_declared_schema(database_url: str) -> None:
    db = Database(database_url)
    try:
        await upgrade(db)
        async with db.read() as conn:
            diff = await conn.run_sync(_diff)
            references = await conn.run_sync(_user_message_references)
            target = await conn.run_sync(_user_statistics_target)
    finally:
        await db.dispose()
    assert diff == []
    # Migration 0011: PostgreSQL checks no reference of user_message rows; SQLite does.
    assert references == ([] if db.dialect_name == "postgresql" else ["message", "user_profile"])
    # Migration 0012: a planner statistic per user on PostgreSQL.
    assert target == (1000 if db.dialect_name == "postgresql" else None)


async def test_upgrade_gives_existing_realms_system_groups(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0002"))
            await conn.execute(
                sa.text(
                    "INSERT INTO realm (id, string_id, name, date_created) VALUES (1, '', 'Old', 0)"
                )
            )
            for user_id, role in [(1, 100), (2, 400), (3, 600)]:
                await conn.execute(
                    sa.text(
                        "INSERT INTO user_profile (id, realm_id, email, delivery_email, full_name,"
                        " api_key, role, date_joined) VALUES (:id, 1, :e, :e, 'X', :k, :r, 0)"
                    ),
                    {"id": user_id, "e": f"u{user_id}@x.org", "k": f"k{user_id}", "r": role},
                )
        await upgrade(db)
        async with db.read() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT g.name, m.user_profile_id FROM user_group g"
                    " LEFT JOIN user_group_membership m ON m.user_group_id = g.id"
                    " WHERE g.realm_id = 1 ORDER BY g.name, m.user_profile_id"
                )
            )
            members: dict[str, list[int]] = {}
            for name, user_id in rows:
                members.setdefault(name, [])
                if user_id is not None:
                    members[name].append(user_id)
    finally:
        await db.dispose()
    assert members == {
        "role:administrators": [],
        "role:everyone": [3],
        "role:fullmembers": [2],
        "role:internet": [],
        "role:members": [2],
        "role:moderators": [],
        "role:nobody": [],
        "role:owners": [1],
    }


async def test_upgrade_keeps_the_old_default_for_deleting_own_messages(tmp_path: Path) -> None:
    """Migration 0024: an organization that kept Zulip 8.0's default (administrators may
    delete their own messages) keeps it under Zulip 10's group setting, whose default is
    everyone; one that chose a policy keeps its choice."""
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0023"))
            await conn.execute(
                sa.text(
                    "INSERT INTO realm (id, string_id, name, date_created, settings) VALUES"
                    " (1, '', 'Old', 0, '{}'),"
                    " (2, 'b', 'Chose', 0, '{\"delete_own_message_policy\": 5}')"
                )
            )
        await upgrade(db)
        async with db.read() as conn:
            rows: dict[int, str] = dict(
                (await conn.execute(sa.text("SELECT id, settings FROM realm ORDER BY id"))).all()
            )
    finally:
        await db.dispose()
    assert json.loads(rows[1]) == {"delete_own_message_policy": 2}
    assert json.loads(rows[2]) == {"delete_own_message_policy": 5}


# A realm of two users and three messages, as an old schema holds them (SQLite).
_OLD_REALM = (
    "INSERT INTO realm (id, string_id, name, date_created) VALUES (1, '', 'Old', 0)",
    "INSERT INTO user_profile (id, realm_id, email, delivery_email, full_name,"
    " api_key, role, date_joined) VALUES (1, 1, 'a@x.org', 'a@x.org', 'A', 'k1',"
    " 400, 0), (2, 1, 'b@x.org', 'b@x.org', 'B', 'k2', 400, 0)",
    "INSERT INTO recipient (id, type, type_id) VALUES (1, 1, 1)",
    "INSERT INTO message (id, realm_id, sender_id, recipient_id, content,"
    " date_sent, sending_client) VALUES (10, 1, 1, 1, 'x', 0, 'test'),"
    " (11, 1, 2, 1, 'y', 0, 'test'), (12, 1, 2, 1, 'z', 0, 'test')",
)


async def test_user_message_is_keyed_without_rowid_on_sqlite(tmp_path: Path) -> None:
    """Migration 0016: SQLite's user_message becomes one B-tree keyed by (user, message),
    its rows and flags kept, the unread index gone; downgrading restores both."""
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")

    async def to(revision: str) -> None:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), revision))

    async def layout() -> tuple[str, list[str], list[tuple[int, int, int]]]:
        async with db.read() as conn:
            table_sql = (
                await conn.execute(
                    sa.text("SELECT sql FROM sqlite_master WHERE name = 'user_message'")
                )
            ).scalar_one()
            indexes = (
                await conn.execute(
                    sa.text(
                        "SELECT name FROM sqlite_master WHERE type = 'index'"
                        " AND tbl_name = 'user_message' AND sql IS NOT NULL ORDER BY name"
                    )
                )
            ).scalars()
            rows = await conn.execute(
                sa.text("SELECT user_profile_id, message_id, flags FROM user_message")
            )
            return table_sql, list(indexes), [tuple(r) for r in rows]

    rows = [(1, 10, 0), (1, 11, 1), (2, 10, 2048 | 2), (2, 11, 8)]
    try:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0015"))
            for statement in _OLD_REALM:
                await conn.execute(sa.text(statement))
            await conn.execute(
                sa.text("INSERT INTO user_message VALUES (:u, :m, :f)"),
                [{"u": u, "m": m, "f": f} for u, m, f in rows],
            )
        old_sql, old_indexes, old_rows = await layout()
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0016"))
        new_sql, new_indexes, new_rows = await layout()
        await to("0015")
        back_sql, back_indexes, back_rows = await layout()
    finally:
        await db.dispose()
    assert "WITHOUT ROWID" not in old_sql and "ix_user_message_unread" in old_indexes
    assert new_sql.rstrip().endswith("WITHOUT ROWID")
    assert new_indexes == [
        "ix_user_message_message_id",
        "ix_user_message_private",
        "ix_user_message_starred",
    ]
    assert sorted(old_rows) == sorted(new_rows) == sorted(back_rows) == sorted(rows)
    assert "WITHOUT ROWID" not in back_sql and back_indexes == old_indexes


class _Steps:
    """Statements and migrations on one database, each in a write transaction of its own;
    after a migration the pool's connections are closed, to read the new schema."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def run(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        async with self.db.write() as conn:
            result = await conn.execute(sa.text(statement), params)
            return [tuple(r) for r in result] if result.returns_rows else []

    async def upgrade(self, revision: str) -> None:
        async with self.db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), revision))
        await self.db.dispose()

    async def downgrade(self, revision: str) -> None:
        async with self.db.write() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), revision))
        await self.db.dispose()

    async def old_realm(self, rows: list[tuple[int, int, int]]) -> None:
        """_OLD_REALM, and ``rows`` (user, message, flags) in user_message, still a table."""
        for statement in _OLD_REALM:
            await self.run(statement)
        await self.run(
            "INSERT INTO user_message VALUES (:u, :m, :f)",
            [dict(zip("umf", r, strict=True)) for r in rows],
        )

    async def both_read(self, rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
        """Two rows staged beside ``rows``: checks that the view reads all of them, and
        returns them (what a downgrade must keep)."""
        staged = [(12, 1, 0), (12, 2, 1)]
        await self.run(
            "INSERT INTO user_message_staged VALUES (:m, :u, :f)",
            [dict(zip("muf", r, strict=True)) for r in staged],
        )
        everything = sorted(rows + [(u, m, f) for m, u, f in staged])
        assert await self.run("SELECT * FROM user_message ORDER BY 1, 2") == everything
        return everything


async def test_user_message_becomes_a_view_of_settled_and_staged_rows_on_sqlite(
    tmp_path: Path,
) -> None:
    """Migration 0019: SQLite's user_message table is renamed user_message_rows, with its
    rows, indexes and planner statistics, beside an empty user_message_staged, and
    user_message reads both; downgrading moves the staged rows back into the table."""
    db = Database(f"sqlite:///{tmp_path / 'old.db'}")
    rows = [(1, 10, 0), (1, 11, 1), (2, 10, 2048 | 2)]
    steps = _Steps(db)
    run = steps.run

    def kinds() -> str:
        return (
            "SELECT name, type FROM sqlite_master WHERE name LIKE 'user_message%'"
            " AND type IN ('table', 'view') ORDER BY name"
        )

    try:
        await steps.upgrade("0018")
        await steps.old_realm(rows)
        await run("ANALYZE user_message")
        stats_before = await run("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'user_message'")
        await upgrade(db)
        await db.dispose()
        assert await run(kinds()) == [
            ("user_message", "view"),
            ("user_message_rows", "table"),
            ("user_message_staged", "table"),
        ]
        assert await run("SELECT * FROM user_message_rows ORDER BY 1, 2") == rows
        stats_after = await run(
            "SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'user_message_rows'"
        )
        assert sorted(stats_after) == sorted(
            ("user_message_rows" if idx == "user_message" else idx, stat)
            for idx, stat in stats_before
        )
        assert stats_before
        everything = await steps.both_read(rows)
        await steps.downgrade("0018")
        assert await run(kinds()) == [("user_message", "table")]
        assert await run("SELECT * FROM user_message ORDER BY 1, 2") == everything
        assert sorted(
            await run("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'user_message'")
        ) == sorted(stats_before)
    finally:
        await db.dispose()


async def test_user_message_becomes_a_view_of_settled_and_staged_rows_on_postgresql(
    empty_postgres_url: str,
) -> None:
    """Migration 0021: PostgreSQL's user_message table is renamed user_message_rows, with
    its rows and indexes, beside an empty user_message_staged, and user_message reads
    both; downgrading moves the staged rows back into the table."""
    db = Database(empty_postgres_url)
    rows = [(1, 10, 0), (1, 11, 1), (2, 10, 2048 | 2)]
    steps = _Steps(db)
    run = steps.run

    def kinds() -> str:
        return (
            "SELECT relname, relkind::text FROM pg_class WHERE relname LIKE 'user_message%'"
            " AND relkind IN ('r', 'v') ORDER BY relname"
        )

    def indexes(table: str) -> str:
        return f"SELECT indexname FROM pg_indexes WHERE tablename = '{table}' ORDER BY 1"

    try:
        await steps.upgrade("0020")
        await steps.old_realm(rows)
        old_indexes = await run(indexes("user_message"))
        await upgrade(db)
        await db.dispose()
        assert await run(kinds()) == [
            ("user_message", "v"),
            ("user_message_rows", "r"),
            ("user_message_staged", "r"),
        ]
        assert await run("SELECT * FROM user_message_rows ORDER BY 1, 2") == rows
        assert await run(indexes("user_message_rows")) == old_indexes
        everything = await steps.both_read(rows)
        await steps.downgrade("0020")
        assert await run(kinds()) == [("user_message", "r")]
        assert await run("SELECT * FROM user_message ORDER BY 1, 2") == everything
        assert await run(indexes("user_message")) == old_indexes
    finally:
        await db.dispose()
