"""Apply the migrations shipped inside the package (``hubbub serve`` does this at start)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from hubbub.db.engine import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: sa.Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: sa.Connection) -> None:
    command.upgrade(alembic_config(connection), "head")


async def upgrade(db: Database) -> None:
    """Bring the schema to the newest revision; a no-op when it is already there."""
    async with db.write() as conn:
        await conn.run_sync(_upgrade)
