"""Migration 0028: existing user groups keep what their users could do, under Zulip 10's
group-valued settings; downgrading gives ``can_mention_group_id`` back."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from alembic import command

from hubbub.db.engine import Database
from hubbub.db.migrate import alembic_config, upgrade

_SYSTEM = ("role:nobody", "role:everyone", "role:administrators")


async def _groups(db: Database) -> dict[str, dict[str, object]]:
    async with db.read() as conn:
        rows = await conn.execute(sa.text("SELECT * FROM user_group ORDER BY id"))
        return {row.name: dict(row._mapping) for row in rows}


async def test_existing_groups_keep_their_permissions_sqlite(tmp_path: Path) -> None:
    await _check_migration(f"sqlite:///{tmp_path / 'old.db'}")


async def test_existing_groups_keep_their_permissions_postgresql(empty_postgres_url: str) -> None:
    await _check_migration(empty_postgres_url)


async def _check_migration(database_url: str) -> None:
    db = Database(database_url)
    try:
        async with db.write() as conn:
            await conn.run_sync(lambda c: command.upgrade(alembic_config(c), "0027"))
            await conn.execute(
                sa.text(
                    "INSERT INTO realm (id, string_id, name, date_created) VALUES (1, '', 'Old', 0)"
                )
            )
            for group_id, name in enumerate(_SYSTEM, start=1):
                await conn.execute(
                    sa.text(
                        "INSERT INTO user_group (id, realm_id, name, description, is_system_group)"
                        " VALUES (:id, 1, :name, '', :system)"
                    ),
                    {"id": group_id, "name": name, "system": True},
                )
            await conn.execute(
                sa.text(
                    "INSERT INTO user_group (id, realm_id, name, description, is_system_group,"
                    " can_mention_group_id) VALUES (10, 1, 'players', '', :system, 3),"
                    " (11, 1, 'anyone', '', :system, NULL)"
                ),
                {"system": False},
            )
        await upgrade(db)
        groups = await _groups(db)
        players = groups["players"]
        assert json.loads(str(players["settings"])) == {
            # Direct members used to manage their groups: the group manages itself.
            "can_add_members_group": 10,
            "can_join_group": 1,
            "can_leave_group": 2,
            "can_manage_group": 10,
            "can_mention_group": 3,
            "can_remove_members_group": 1,
        }
        assert json.loads(str(groups["anyone"]["settings"]))["can_mention_group"] == 2
        assert (
            players["creator_id"],
            players["date_created"],
            players["can_mention_group_id"],
        ) == (
            None,
            None,
            None,
        )
        assert not players["deactivated"]
        assert set(json.loads(str(groups["role:everyone"]["settings"])).values()) == {1}

        async with db.write() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0027"))
        groups = await _groups(db)
        assert "settings" not in groups["players"]
        assert groups["players"]["can_mention_group_id"] == 3
        assert groups["anyone"]["can_mention_group_id"] == 2
    finally:
        await db.dispose()
