"""Several processes starting at once on one empty PostgreSQL database (hosts of workers
restarted together) must not fail on each other's half-made tables: one migrates, the
others wait on the advisory lock and then find nothing to do."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade


async def test_concurrent_upgrades_on_an_empty_postgresql_database(
    empty_postgres_url: str,
) -> None:
    databases = [Database(empty_postgres_url) for _ in range(3)]
    try:
        results = await asyncio.gather(*(upgrade(db) for db in databases), return_exceptions=True)
        assert [r for r in results if isinstance(r, BaseException)] == []
        async with databases[0].read() as conn:
            versions = (
                await conn.execute(sa.text("SELECT version_num FROM alembic_version"))
            ).all()
        assert len(versions) == 1
    finally:
        for db in databases:
            await db.dispose()


def test_head_revision_is_alembics_head() -> None:
    from alembic.script import ScriptDirectory

    from hubbub.db.migrate import alembic_config, head_revision

    assert head_revision() == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_an_up_to_date_database_does_not_load_alembic(tmp_path: Path) -> None:
    """The check that nothing is pending reads alembic_version itself (idle memory)."""
    script = (
        "import asyncio, sys\n"
        "from hubbub.db.engine import Database\n"
        "from hubbub.db.migrate import upgrade\n"
        "async def main():\n"
        f"    db = Database('sqlite:///{tmp_path / 'h.db'}')\n"
        "    await upgrade(db)\n"
        "    await db.dispose()\n"
        "asyncio.run(main())\n"
        "print('alembic' in sys.modules)\n"
    )
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert first.stdout.strip() == "True", first.stderr  # an empty database: migrated
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert second.stdout.strip() == "False", second.stderr
