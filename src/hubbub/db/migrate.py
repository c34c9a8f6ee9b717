"""Apply the migrations shipped inside the package (``hubbub serve`` does this at start)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa

from hubbub.db.engine import Database

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"

# Several `hubbub serve` processes (hosts of workers) may start at once on one PostgreSQL
# database; this transaction-scoped advisory lock lets one migrate while the others wait,
# then find nothing left to do. The number is arbitrary but fixed ("hubbub" in ASCII).
MIGRATION_LOCK_KEY = 0x687562627562


def alembic_config(connection: sa.Connection | None = None) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _upgrade(connection: sa.Connection) -> None:
    from alembic import command

    command.upgrade(alembic_config(connection), "head")


def head_revision() -> str:
    """The newest shipped revision. Revisions are numbered and each file is named after its
    number ("0009_send_keys.py" is revision "0009"), in one line of history."""
    return max(p.name.split("_", 1)[0] for p in (MIGRATIONS_DIR / "versions").glob("0*.py"))


async def _at_head(db: Database) -> bool:
    async with db.read() as conn:
        if not await conn.run_sync(lambda c: sa.inspect(c).has_table("alembic_version")):
            return False
        current = (await conn.execute(sa.text("SELECT version_num FROM alembic_version"))).all()
    return [row[0] for row in current] == [head_revision()]


async def upgrade(db: Database) -> None:
    """Bring the schema to the newest revision; a no-op when it is already there.

    Alembic (megabytes of modules that a Python process never gives back) is imported only
    when there is something to apply, so a server restarted on an up-to-date database
    keeps its idle memory lower."""
    if await _at_head(db):
        return
    async with db.write() as conn:
        if not db.is_sqlite:  # SQLite's single writer already serializes this transaction
            await conn.execute(sa.text(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})"))
        await conn.run_sync(_upgrade)
