"""The realm's users kept by a process (``queries.users.RealmUsers``) and the people
version the triggers of migration 0017 count: kept while no user_profile row of the realm
changes, read again after any change, whoever wrote it."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.db.engine import Database
from hubbub.db.tables import realm_people_version, user_profile
from hubbub.queries import users as users_queries
from hubbub.queries.users import RealmUsers, list_users
from tests.helpers import TestEnv, assert_success


class Reads:
    """Counts ``list_users`` calls (the read RealmUsers saves)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = users_queries.list_users

        async def counting(conn: Any, realm_id: int) -> Any:
            self.count += 1
            return await original(conn, realm_id)

        monkeypatch.setattr(users_queries, "list_users", counting)


async def _version(db: Database, realm_id: int) -> int:
    async with db.read() as conn:
        query = sa.select(realm_people_version.c.version).where(
            realm_people_version.c.realm_id == realm_id
        )
        return int((await conn.execute(query)).scalar_one_or_none() or 0)


async def test_triggers_count_every_change_of_a_realms_users(env: TestEnv) -> None:
    db, realm_id = env.services.db, env.realm.id
    other = await env.create_realm("elsinore", "Elsinore")
    start, other_start = await _version(db, realm_id), await _version(db, other.id)
    assert start > 0  # the standard users were inserted
    await env.create_user("laertes@example.com", "Laertes")
    assert await _version(db, realm_id) == start + 1
    async with db.write() as conn:
        await conn.execute(
            sa.update(user_profile)
            .where(user_profile.c.realm_id == realm_id)
            .values(timezone="Europe/Copenhagen")
        )
    # One per row: the seven users of the realm.
    assert await _version(db, realm_id) == start + 8
    async with db.write() as conn:
        await conn.execute(
            sa.delete(user_profile).where(user_profile.c.email == "laertes@example.com")
        )
    assert await _version(db, realm_id) == start + 9
    assert await _version(db, other.id) == other_start


async def test_kept_users_are_read_again_only_after_a_change(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = RealmUsers()
    reads = Reads(monkeypatch)
    db, realm_id = env.services.db, env.realm.id
    other = await env.create_realm("elsinore", "Elsinore")

    async def current() -> list[str]:
        async with db.read() as conn:
            users = await kept.get(conn, realm_id)
            # The same as a read in this transaction (the original, not counted).
            assert users == await list_users(conn, realm_id)
        return [u.full_name for u in users]

    names = await current()
    assert reads.count == 1
    assert await current() == names
    assert reads.count == 1  # kept
    # A user of another realm changes: this realm's users stay kept.
    await env.create_user("yorick@elsinore.example.com", "Yorick", realm=other)
    assert await current() == names
    assert reads.count == 1
    # Renamed through the API: read again.
    renamed = {"full_name": "Prince Hamlet"}
    assert_success(await env.client("hamlet").patch("/settings", renamed))
    assert "Prince Hamlet" in await current()
    assert reads.count == 2
    # Written by another connection of its own, as a command or another worker would.
    other_db = Database(env.services.settings.database_url)
    try:
        async with other_db.write() as conn:
            await conn.execute(
                sa.update(user_profile)
                .where(user_profile.c.email == "othello@example.com")
                .values(full_name="The Moor")
            )
    finally:
        await other_db.dispose()
    assert "The Moor" in await current()
    assert reads.count == 3
    # What the caller does with the list it gets does not reach the kept users.
    async with db.read() as conn:
        (await kept.get(conn, realm_id)).clear()
        assert len(await kept.get(conn, realm_id)) == len(names)


async def test_register_and_get_users_show_a_change_made_elsewhere(env: TestEnv) -> None:
    """Both endpoints use the process's kept users; a rename written by another
    connection is in the next answer of each."""
    hamlet = env.client("hamlet")

    async def names() -> tuple[set[str], set[str]]:
        state = assert_success(
            await hamlet.post("/register", {"fetch_event_types": '["realm_user"]'})
        )
        members = assert_success(await hamlet.get("/users"))["members"]
        return {p["full_name"] for p in state["realm_users"]}, {m["full_name"] for m in members}

    before_register, before_users = await names()
    assert "Iago" in before_register and "Iago" in before_users
    other_db = Database(env.services.settings.database_url)
    try:
        async with other_db.write() as conn:
            await conn.execute(
                sa.update(user_profile)
                .where(user_profile.c.email == "iago@example.com")
                .values(full_name="Honest Iago")
            )
    finally:
        await other_db.dispose()
    after_register, after_users = await names()
    assert "Honest Iago" in after_register and "Iago" not in after_register
    assert "Honest Iago" in after_users and "Iago" not in after_users
