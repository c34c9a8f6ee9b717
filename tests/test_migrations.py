"""Migrations: they build exactly the schema ``db/tables.py`` declares, and upgrading an
existing database gives its realms their system groups."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from hubbub.db.engine import Database
from hubbub.db.migrate import alembic_config, upgrade
from hubbub.db.tables import metadata


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


def _diff(connection: sa.Connection) -> list[Any]:
    with warnings.catch_warnings():
        # Expression indexes cannot be reflected on SQLite; alembic warns and skips them.
        warnings.simplefilter("ignore")
        context = MigrationContext.configure(
            connection,
            opts={"compare_type": True, "include_object": _for_dialect(connection.dialect.name)},
        )
        return list(compare_metadata(context, metadata))


def _user_message_references(connection: sa.Connection) -> list[str]:
    return sorted(
        fk["referred_table"] for fk in sa.inspect(connection).get_foreign_keys("user_message")
    )


def _user_statistics_target(connection: sa.Connection) -> int | None:
    """PostgreSQL: the planner statistics' target of user_message.user_profile_id."""
    if connection.dialect.name != "postgresql":
        return None
    query = sa.text(
        "SELECT attstattarget FROM pg_attribute "
        "WHERE attrelid = 'user_message'::regclass AND attname = 'user_profile_id'"
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
            for statement in (
                "INSERT INTO realm (id, string_id, name, date_created) VALUES (1, '', 'Old', 0)",
                "INSERT INTO user_profile (id, realm_id, email, delivery_email, full_name,"
                " api_key, role, date_joined) VALUES (1, 1, 'a@x.org', 'a@x.org', 'A', 'k1',"
                " 400, 0), (2, 1, 'b@x.org', 'b@x.org', 'B', 'k2', 400, 0)",
                "INSERT INTO recipient (id, type, type_id) VALUES (1, 1, 1)",
                "INSERT INTO message (id, realm_id, sender_id, recipient_id, content,"
                " date_sent, sending_client) VALUES (10, 1, 1, 1, 'x', 0, 'test'),"
                " (11, 1, 2, 1, 'y', 0, 'test')",
            ):
                await conn.execute(sa.text(statement))
            await conn.execute(
                sa.text("INSERT INTO user_message VALUES (:u, :m, :f)"),
                [{"u": u, "m": m, "f": f} for u, m, f in rows],
            )
        old_sql, old_indexes, old_rows = await layout()
        await upgrade(db)
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
