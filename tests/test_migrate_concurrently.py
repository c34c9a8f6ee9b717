"""Several processes starting at once on one empty PostgreSQL database (hosts of workers
restarted together) must not fail on each other's half-made tables: one migrates, the
others wait on the advisory lock and then find nothing to do."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from tests.conftest import PG_ENV, _admin_execute


async def test_concurrent_upgrades_on_an_empty_postgresql_database() -> None:
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"PostgreSQL variant: set {PG_ENV} to run it")
    name = f"hubbub_migrate_{uuid.uuid4().hex[:12]}"
    await _admin_execute(base, f'CREATE DATABASE "{name}"')
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    databases = [Database(url) for _ in range(3)]
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
        await _admin_execute(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
