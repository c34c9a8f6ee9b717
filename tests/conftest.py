"""Fixtures: every API test runs on SQLite and, when HUBBUB_TEST_DATABASE_URL is set, on
PostgreSQL (a fresh database per run, emptied between tests). Both are migrated once per
run: a SQLite test gets a copy of a migrated file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from hubbub.db.engine import Database
from hubbub.db.migrate import upgrade
from hubbub.db.tables import stored_tables
from hubbub.settings import Settings
from tests.helpers import TestEnv, running_env, with_test_redis
from tests.push_bouncer import FakeBouncer, running_bouncer, with_bouncer

PG_ENV = "HUBBUB_TEST_DATABASE_URL"


async def _admin_execute(server_url: str, statement: str) -> None:
    db = Database(server_url)
    try:
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(sa.text(statement))
    finally:
        await db.dispose()


@contextmanager
def _new_database(base: str, prefix: str) -> Iterator[str]:
    """A new, empty PostgreSQL database beside ``base``'s, dropped when the block ends."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    asyncio.run(_admin_execute(base, f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        asyncio.run(_admin_execute(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str | None]:
    """A new, migrated PostgreSQL database for this test run, dropped at the end."""
    base = os.environ.get(PG_ENV)
    if not base:
        yield None
        return

    async def migrate(url: str) -> None:
        db = Database(url)
        await upgrade(db)
        await db.dispose()

    with _new_database(base, "hubbub_test") as url:
        asyncio.run(migrate(url))
        yield url


@pytest.fixture
def empty_postgres_url() -> Iterator[str]:
    """A new PostgreSQL database of the test's own, not migrated, dropped after it (a
    PostgreSQL variant: skipped unless HUBBUB_TEST_DATABASE_URL is set)."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"PostgreSQL variant: set {PG_ENV} to run it")
    with _new_database(base, "hubbub_empty") as url:
        yield url


async def _clear_all(url: str) -> None:
    """Empty every table and restart every id sequence, as a fresh database would be.

    ``TRUNCATE`` of all tables costs about a second on PostgreSQL (it replaces each
    table's files), and the tests leave a few dozen rows behind: one ``DELETE`` per
    table, with foreign-key triggers off for the session (``replica``), is milliseconds.
    A role that may not change ``session_replication_role`` gets the ``TRUNCATE``."""
    db = Database(url)
    names = [t.name for t in stored_tables(db.dialect_name)]
    try:
        async with db.engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            try:
                await driver.execute(
                    "BEGIN; SET LOCAL session_replication_role = replica;"
                    + "".join(f'DELETE FROM "{name}";' for name in names)
                    + "SELECT setval(oid, 1, false) FROM pg_class WHERE relkind = 'S';"
                    + "COMMIT;"
                )
            except Exception:
                await driver.execute("ROLLBACK")
                quoted = ", ".join(f'"{name}"' for name in names)
                await driver.execute(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE")
    finally:
        await db.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite database, made once per run; each test gets a copy of the file
    instead of running every migration again (a third of a second a test)."""
    path = tmp_path_factory.mktemp("template") / "hubbub.db"

    async def migrate() -> None:
        db = Database(f"sqlite:///{path}")
        try:
            await upgrade(db)
        finally:
            await db.dispose()

    asyncio.run(migrate())
    # Everything into the main file, so that copying it alone copies it all.
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path, postgres_url: str | None) -> str:
    if request.param == "sqlite":
        target = tmp_path / "hubbub.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), target)
        return f"sqlite:///{target}"
    if postgres_url is None:
        pytest.skip(f"PostgreSQL variant: set {PG_ENV} to run it")
    asyncio.run(_clear_all(postgres_url))
    return postgres_url


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(
        data_dir=tmp_path, database_url=database_url, rate_limit=0, heartbeat_seconds=0.2
    )


@pytest.fixture
async def env(settings: Settings) -> AsyncIterator[TestEnv]:
    async with running_env(settings) as test_env:
        yield test_env


@pytest.fixture(params=["memory", "redis"])
async def bus_env(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[TestEnv]:
    """The env on each event bus in turn: the in-memory one, then Redis (which runs when
    HUBBUB_TEST_REDIS_URL is set), for tests of what travels as events."""
    if request.param == "redis":
        settings = with_test_redis(settings)
    async with running_env(settings) as test_env:
        yield test_env


@pytest.fixture
def bouncer() -> Iterator[FakeBouncer]:
    """A real HTTP server on a free port standing in for Zulip's push bouncer."""
    with running_bouncer() as fake:
        yield fake


@pytest.fixture
async def bounced_env(settings: Settings, bouncer: FakeBouncer) -> AsyncIterator[TestEnv]:
    async with running_env(with_bouncer(settings, bouncer)) as test_env:
        yield test_env
