"""Apply the migrations shipped inside the package (``hubbub serve`` does this at start)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from hubbub.db.engine import Database

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

# Several `hubbub serve` processes (hosts of workers) may start at once on one PostgreSQL
# database; this transaction-scoped advisory lock lets one migrate while the others wait,
# then find nothing left to do. The number is arbitrary but fixed ("hubbub" in ASCII).
MIGRATION_LOCK_KEY = 0x687562627562


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
        if not db.is_sqlite:  # SQLite's single writer already serializes this transaction
            await conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"))
        await conn.run_sync(_upgrade)
