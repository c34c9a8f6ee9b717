"""The realm's users and groups kept by a process (``queries/people.PeopleCache``) and the
people version the triggers of migrations 0017 and 0018 count: kept while no user, group
or membership row of the realm changes, read again after any change, whoever wrote it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import sqlalchemy as sa

from hubbub.db.engine import Database
from hubbub.db.tables import user_group, user_profile
from hubbub.queries import people as people_queries
from hubbub.queries.people import PeopleCache, get_people_version
from hubbub.queries.user_groups import get_user_group_dicts
from hubbub.queries.users import list_users
from tests.helpers import TestEnv, assert_success


class Reads:
    """Counts the reads PeopleCache saves (``list_users``, ``get_user_group_dicts``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.users = 0
        self.groups = 0
        users, groups = list_users, get_user_group_dicts

        async def counting_users(conn: Any, realm_id: int) -> Any:
            self.users += 1
            return await users(conn, realm_id)

        async def counting_groups(conn: Any, realm_id: int) -> Any:
            self.groups += 1
            return await groups(conn, realm_id)

        monkeypatch.setattr(people_queries, "list_users", counting_users)
        monkeypatch.setattr(people_queries, "get_user_group_dicts", counting_groups)


async def _version(db: Database, realm_id: int) -> int:
    async with db.read() as conn:
        return await get_people_version(conn, realm_id)


async def test_triggers_count_every_change_of_a_realms_people(env: TestEnv) -> None:
    db, realm_id = env.services.db, env.realm.id
    other = await env.create_realm("elsinore", "Elsinore")
    other_start = await _version(db, other.id)
    owner = env.client("desdemona")

    async def counted(change: Callable[[], Awaitable[Any]]) -> int:
        before = await _version(db, realm_id)
        await change()
        return await _version(db, realm_id) - before

    assert await _version(db, realm_id) > 0  # the standard users were inserted
    # A new user: its row and its three system group memberships.
    laertes = await env.create_user("laertes@example.com", "Laertes")
    assert await _version(db, realm_id) > 0
    assert (
        await counted(
            lambda: env.write_elsewhere(
                sa.update(user_profile)
                .where(user_profile.c.realm_id == realm_id)
                .values(timezone="Europe/Copenhagen"),
            )
        )
        == 7  # one a row: the realm's seven users
    )
    created: dict[str, Any] = {}

    async def create_group() -> None:
        params = {"name": "players", "description": "", "members": [laertes.id]}
        assert_success(await owner.post("/user_groups/create", params))
        async with db.read() as conn:
            found = await conn.execute(
                sa.select(user_group.c.id).where(user_group.c.name == "players")
            )
            created["id"] = found.scalar_one()

    assert await counted(create_group) == 2  # the group and its one member
    group = created["id"]
    hamlet = env.users["hamlet"].id
    add = {"add": [hamlet]}
    assert await counted(lambda: owner.post(f"/user_groups/{group}/members", add)) == 1
    remove = {"delete": [hamlet]}
    assert await counted(lambda: owner.post(f"/user_groups/{group}/members", remove)) == 1
    admins = next(g for g in await _groups(env) if g["name"] == "role:administrators")["id"]
    sub = {"add": [admins]}
    assert await counted(lambda: owner.post(f"/user_groups/{group}/subgroups", sub)) == 1
    rename = {"name": "the players"}
    assert await counted(lambda: owner.patch(f"/user_groups/{group}", rename)) == 1
    # Deactivation (feature level 290) changes the group's row.
    assert await counted(lambda: owner.post(f"/user_groups/{group}/deactivate")) == 1
    assert (
        await counted(
            lambda: env.write_elsewhere(
                sa.delete(user_profile).where(user_profile.c.id == laertes.id)
            )
        )
        >= 1
    )
    assert await _version(db, other.id) == other_start


async def _groups(env: TestEnv) -> list[dict[str, Any]]:
    async with env.services.db.read() as conn:
        return await get_user_group_dicts(conn, env.realm.id)


async def test_kept_people_are_read_again_only_after_a_change(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = PeopleCache()
    reads = Reads(monkeypatch)
    db, realm_id = env.services.db, env.realm.id
    other = await env.create_realm("elsinore", "Elsinore")

    async def current() -> tuple[list[str], list[str]]:
        async with db.read() as conn:
            users = await kept.users(conn, realm_id)
            groups = await kept.groups(conn, realm_id)
            # The same as reads in this transaction (the originals, not counted).
            assert users == await list_users(conn, realm_id)
            assert groups == await get_user_group_dicts(conn, realm_id)
        return [u.full_name for u in users], [g["name"] for g in groups]

    names, group_names = await current()
    assert (reads.users, reads.groups) == (1, 1)
    assert await current() == (names, group_names)
    assert (reads.users, reads.groups) == (1, 1)  # kept
    # A user of another realm changes: this realm's people stay kept.
    await env.create_user("yorick@elsinore.example.com", "Yorick", realm=other)
    assert await current() == (names, group_names)
    assert (reads.users, reads.groups) == (1, 1)
    # Renamed through the API: read again.
    assert_success(await env.client("hamlet").patch("/settings", {"full_name": "Prince Hamlet"}))
    assert "Prince Hamlet" in (await current())[0]
    assert (reads.users, reads.groups) == (2, 2)
    # A group renamed by another connection.
    full_members = next(g for g in await _groups(env) if g["name"] == "role:fullmembers")["id"]
    await env.write_elsewhere(
        sa.update(user_group).where(user_group.c.id == full_members).values(description="x")
    )
    await current()
    assert (reads.users, reads.groups) == (3, 3)
    # What a caller does with what it gets does not reach what is kept.
    async with db.read() as conn:
        (await kept.users(conn, realm_id)).clear()
        groups = await kept.groups(conn, realm_id)
        groups[0]["name"] = "changed"
        groups.clear()
        assert len(await kept.users(conn, realm_id)) == len(names)
        assert [g["name"] for g in await kept.groups(conn, realm_id)] == group_names


async def test_endpoints_show_a_change_made_elsewhere(env: TestEnv) -> None:
    """``/register``, ``GET /users`` and ``GET /user_groups`` use the process's kept
    people; a change written by another connection is in the next answer of each."""
    hamlet = env.client("hamlet")

    async def seen() -> tuple[set[str], set[str], dict[str, list[int]]]:
        state = assert_success(
            await hamlet.post(
                "/register", {"fetch_event_types": '["realm_user", "realm_user_groups"]'}
            )
        )
        members = assert_success(await hamlet.get("/users"))["members"]
        groups = assert_success(await hamlet.get("/user_groups"))["user_groups"]
        assert sorted(state["realm_user_groups"], key=lambda g: g["id"]) == sorted(
            groups, key=lambda g: g["id"]
        )
        return (
            {p["full_name"] for p in state["realm_users"]},
            {m["full_name"] for m in members},
            {g["name"]: g["members"] for g in groups},
        )

    before_register, before_users, before_groups = await seen()
    assert "Iago" in before_register and "Iago" in before_users
    iago = env.users["iago"].id
    assert iago in before_groups["role:administrators"]
    await env.write_elsewhere(
        sa.update(user_profile)
        .where(user_profile.c.email == "iago@example.com")
        .values(full_name="Honest Iago"),
    )
    after_register, after_users, _ = await seen()
    assert "Honest Iago" in after_register and "Iago" not in after_register
    assert "Honest Iago" in after_users and "Iago" not in after_users
    assert_success(
        await env.client("desdemona").patch(f"/users/{iago}", {"role": 400})  # a member now
    )
    _, _, after_groups = await seen()
    assert iago not in after_groups["role:administrators"]
    assert iago in after_groups["role:members"]


async def test_message_pages_name_users_from_kept_people(
    env: TestEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GET /messages`` and ``GET /messages/{id}`` name senders and direct-message
    members from the kept users (their rows are not read while kept); a rename written
    by another connection is on the next page."""
    from hubbub.db.fast import fetch_rows
    from hubbub.queries import message_dicts
    from tests.messages_helpers import send_direct_message, send_stream_message

    await env.subscribe("hamlet", "Verona")
    await env.subscribe("iago", "Verona")
    stream_id = await send_stream_message(env, "iago", "Verona", "to the stream")
    direct_id = await send_direct_message(env, "iago", ["hamlet", "othello"], "to two")
    hamlet = env.client("hamlet")
    user_reads: list[set[int]] = []

    async def counting(conn: Any, statement: Any, params: Any = None) -> Any:
        if statement is message_dicts._USERS(conn):
            user_reads.append(set(_ids_of(params["ids"])))
        return await fetch_rows(conn, statement, params)

    monkeypatch.setattr(message_dicts, "fetch_rows", counting)

    async def page() -> dict[int, dict[str, Any]]:
        found = assert_success(
            await hamlet.get("/messages", {"anchor": "newest", "num_before": 10, "num_after": 0})
        )["messages"]
        return {m["id"]: m for m in found}

    def names(message: dict[str, Any]) -> set[str]:
        return {p["full_name"] for p in message["display_recipient"]}

    first = await page()
    assert first[stream_id]["sender_full_name"] == "Iago"
    assert names(first[direct_id]) == {"Iago", "Hamlet", "Othello"}
    await env.write_elsewhere(
        sa.update(user_profile)
        .where(user_profile.c.email == "othello@example.com")
        .values(full_name="The Moor"),
    )
    await env.write_elsewhere(
        sa.update(user_profile)
        .where(user_profile.c.email == "iago@example.com")
        .values(full_name="Honest Iago"),
    )
    second = await page()
    assert second[stream_id]["sender_full_name"] == "Honest Iago"
    assert names(second[direct_id]) == {"Honest Iago", "Hamlet", "The Moor"}
    one = assert_success(await hamlet.get(f"/messages/{direct_id}"))["message"]
    assert one["sender_full_name"] == "Honest Iago"
    assert names(one) == {"Honest Iago", "Hamlet", "The Moor"}
    assert user_reads == []
    # The spy does see a users read: one the kept users cannot answer (another realm's).
    other = await env.create_realm("elsinore", "Elsinore")
    yorick = await env.create_user("yorick@elsinore.example.com", "Yorick", realm=other)
    async with env.services.db.read() as conn:
        await message_dicts._users_by_id(conn, {yorick.id}, env.realm.id, env.services.people)
    assert user_reads == [{yorick.id}]


async def test_users_outside_the_kept_realm_are_read(env: TestEnv) -> None:
    """A user the realm's kept users lack (another realm's) is read from its row."""
    from hubbub.queries.message_dicts import _users_by_id

    other = await env.create_realm("elsinore", "Elsinore")
    yorick = await env.create_user("yorick@elsinore.example.com", "Yorick", realm=other)
    hamlet = env.users["hamlet"]
    async with env.services.db.read() as conn:
        found = await _users_by_id(conn, {hamlet.id, yorick.id}, env.realm.id, env.services.people)
        # Elsinore's own kept users, read separately.
        alone = await _users_by_id(conn, {yorick.id}, other.id, env.services.people)
    assert {u.full_name for u in found.values()} == {"Hamlet", "Yorick"}
    assert found[yorick.id] == alone[yorick.id]
    assert found[hamlet.id].email == hamlet.email


def _ids_of(value: Any) -> list[int]:
    """The ids of an ``ids_argument`` (a JSON list on SQLite, a list on PostgreSQL)."""
    import json

    return list(json.loads(value)) if isinstance(value, str) else list(value)
