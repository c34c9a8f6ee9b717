"""User groups and the organization's group-valued permissions in tests, set as a client
sets them."""

from __future__ import annotations

from typing import Any

from hubbub.queries.user_groups import get_group_id_by_name
from tests.helpers import TestEnv, assert_success


async def system_group_id(env: TestEnv, name: str) -> int:
    """The id of a group of the test realm by name (``role:members``, or a user group)."""
    async with env.services.db.read() as conn:
        return await get_group_id_by_name(conn, env.realm.id, name)


async def set_group_setting(
    env: TestEnv, setting: str, value: int | str | dict[str, Any], *, user: str = "desdemona"
) -> None:
    """``PATCH /realm`` ``setting`` to ``value``: a group id, a group's name, or an
    anonymous group; done by an owner, who may change every setting."""
    if isinstance(value, str):
        value = await system_group_id(env, value)
    assert_success(await env.client(user).patch("/realm", {setting: {"new": value}}))


async def user_groups(env: TestEnv, **params: Any) -> dict[str, dict[str, Any]]:
    """``GET /user_groups`` as a member, by group name."""
    body = assert_success(await env.client("hamlet").get("/user_groups", params))
    return {g["name"]: g for g in body["user_groups"]}


async def create_user_group(
    env: TestEnv,
    name: str,
    members: list[str],
    *,
    user: str = "hamlet",
    description: str = "",
    **extra: Any,
) -> int:
    """Create a user group of the named test users through the API as ``user``; its id."""
    params = {
        "name": name,
        "description": description,
        "members": [env.users[m].id for m in members],
        **extra,
    }
    assert_success(await env.client(user).post("/user_groups/create", params))
    return await system_group_id(env, name)
