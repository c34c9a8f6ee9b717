"""``/user_groups``: user-defined groups, members, subgroups, and who may change them."""

from __future__ import annotations

from typing import Any

from tests.group_settings_helpers import create_user_group, set_group_setting, user_groups
from tests.helpers import TestEnv, assert_error, assert_success


async def test_create_and_list(env: TestEnv) -> None:
    groups = await user_groups(env)
    everyone, nobody = groups["role:everyone"]["id"], groups["role:nobody"]["id"]
    hamlet, othello = env.users["hamlet"].id, env.users["othello"].id
    group_id = await create_user_group(
        env, "players", ["othello", "hamlet"], description="The players"
    )
    listed = (await user_groups(env))["players"]
    assert isinstance(listed.pop("date_created"), int)
    creator = {"direct_members": [hamlet], "direct_subgroups": []}
    assert listed == {
        "id": group_id,
        "name": "players",
        "description": "The players",
        "members": sorted([hamlet, othello]),
        "direct_subgroup_ids": [],
        "is_system_group": False,
        # Zulip 10.2's defaults: the creator manages and adds members (feature levels
        # 283 and 305), nobody joins or removes members, anyone leaves and mentions.
        "creator_id": hamlet,
        "deactivated": False,
        "can_add_members_group": creator,
        "can_join_group": nobody,
        "can_leave_group": everyone,
        "can_manage_group": creator,
        "can_mention_group": everyone,
        "can_remove_members_group": nobody,
    }
    # System groups: no creator, and nobody for every setting.
    system = groups["role:members"]
    assert (system["creator_id"], system["date_created"], system["deactivated"]) == (
        None,
        None,
        False,
    )
    assert system["can_manage_group"] == system["can_mention_group"] == nobody
    # members may be left out (Zulip 8.0 defaults it to none).
    assert_success(
        await env.client("iago").post("/user_groups/create", {"name": "empty", "description": ""})
    )
    assert (await user_groups(env))["empty"]["members"] == []


async def test_create_with_can_mention_group(env: TestEnv) -> None:
    groups = await user_groups(env)
    admins = groups["role:administrators"]["id"]
    await create_user_group(env, "a", [], can_mention_group=admins)
    assert (await user_groups(env))["a"]["can_mention_group"] == admins
    # The name used before feature level 198.
    await create_user_group(env, "b", [], can_mention_group_id=groups["role:nobody"]["id"])
    assert (await user_groups(env))["b"]["can_mention_group"] == groups["role:nobody"]["id"]


async def test_create_errors_change_nothing(env: TestEnv) -> None:
    before = await user_groups(env)
    await create_user_group(env, "players", ["hamlet"])
    before = await user_groups(env)
    groups = before
    client = env.client("hamlet")
    user_group = await create_user_group(env, "tmp", [])
    assert_success(await env.client("desdemona").post(f"/user_groups/{user_group}/deactivate"))
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "players"}, "User group 'players' already exists."),
        ({"name": "role:x"}, "User group name cannot start with 'role:'."),
        ({"name": "@x"}, "User group name cannot start with '@'."),
        ({"name": "user:x"}, "User group name cannot start with 'user:'."),
        ({"name": "stream:x"}, "User group name cannot start with 'stream:'."),
        ({"name": "x" * 101}, "User group name cannot exceed 100 characters."),
        ({"members": [9999]}, "Invalid user ID: 9999"),
        ({"members": "[1"}, "members is not valid JSON"),
        ({"name": " "}, "User group name can't be empty!"),
        ({"can_mention_group": 9999}, "Invalid user group"),
        (
            {"can_mention_group": groups["role:internet"]["id"]},
            "'can_mention_group' setting cannot be set to 'role:internet' group.",
        ),
        (
            {"can_manage_group": {"direct_members": [9999], "direct_subgroups": []}},
            "Invalid user ID: 9999",
        ),
        (
            {"can_join_group": {"direct_members": [], "direct_subgroups": [9999]}},
            # One subgroup and no members stand for that group.
            "Invalid user group",
        ),
        (
            {"can_join_group": {"direct_members": [1], "direct_subgroups": [9999]}},
            "Invalid user group ID: 9999",
        ),
        # A deactivated group is no value of a setting (feature level 290).
        ({"can_leave_group": user_group}, "User group is deactivated."),
        ({"subgroups": [user_group]}, "User group is deactivated."),
        ({"subgroups": [9999]}, "Invalid user group ID: 9999"),
    ]
    for extra, msg in cases:
        params = {"name": "new", "description": "", "members": [], **extra}
        assert_error(await client.post("/user_groups/create", params), msg)
    assert_error(
        await client.post("/user_groups/create", {"name": "new", "members": []}),
        "Missing 'description' argument",
        code="REQUEST_VARIABLE_MISSING",
    )
    assert_error(
        await env.client("polonius").post(
            "/user_groups/create", {"name": "new", "description": ""}
        ),
        "Not allowed for guest users",
    )
    assert await user_groups(env) == before


async def test_create_and_manage_all_groups_settings(env: TestEnv) -> None:
    """can_create_groups and can_manage_all_groups (feature level 299)."""
    await set_group_setting(env, "can_create_groups", "role:moderators")
    assert_error(
        await env.client("hamlet").post("/user_groups/create", {"name": "x", "description": ""}),
        "Insufficient permission",
    )
    mods = await create_user_group(env, "mods", [], user="shiva")
    # Only the realm's owners manage every group by default, administrators included.
    assert_error(
        await env.client("iago").patch(f"/user_groups/{mods}", {"description": "x"}),
        "Insufficient permission",
    )
    assert_success(await env.client("desdemona").patch(f"/user_groups/{mods}", {"name": "m"}))
    await set_group_setting(env, "can_manage_all_groups", "role:administrators")
    assert_success(await env.client("iago").patch(f"/user_groups/{mods}", {"description": "x"}))
    # Outside the setting, a group's creator manages it (can_manage_group's default).
    assert_success(await env.client("shiva").patch(f"/user_groups/{mods}", {"description": "y"}))
    assert_error(
        await env.client("othello").patch(f"/user_groups/{mods}", {"description": "z"}),
        "Insufficient permission",
    )
    # Guests never create groups, even when the setting names them.
    guest = {"direct_members": [env.users["polonius"].id], "direct_subgroups": []}
    await set_group_setting(env, "can_create_groups", guest)
    assert_error(
        await env.client("polonius").post("/user_groups/create", {"name": "y", "description": ""}),
        "Not allowed for guest users",
    )


async def test_update(env: TestEnv) -> None:
    group_id = await create_user_group(env, "players", ["hamlet"])
    groups = await user_groups(env)
    client = env.client("hamlet")
    assert_success(await client.patch(f"/user_groups/{group_id}", {"name": "actors"}))
    assert_success(await client.patch(f"/user_groups/{group_id}", {"description": "New"}))
    admins = groups["role:administrators"]["id"]
    assert_success(await client.patch(f"/user_groups/{group_id}", {"can_mention_group_id": admins}))
    group = (await user_groups(env))["actors"]
    assert (group["description"], group["can_mention_group"]) == ("New", admins)
    # Same values again: nothing to change, still a success.
    assert_success(
        await client.patch(f"/user_groups/{group_id}", {"name": "actors", "description": "New"})
    )
    cases: list[tuple[int, dict[str, Any], str]] = [
        (group_id, {}, "No new data supplied"),
        (9999, {"name": "x"}, "Invalid user group"),
        (groups["role:members"]["id"], {"name": "x"}, "Insufficient permission"),
        (group_id, {"name": "role:x"}, "User group name cannot start with 'role:'."),
        (group_id, {"name": "role:members"}, "User group name cannot start with 'role:'."),
        (group_id, {"can_mention_group": {"new": 9999}}, "Invalid user group"),
        (
            group_id,
            {"can_mention_group": {"new": groups["role:internet"]["id"]}},
            "'can_mention_group' setting cannot be set to 'role:internet' group.",
        ),
        (
            group_id,
            {"can_mention_group": {"new": admins, "old": groups["role:nobody"]["id"]}},
            "'old' value does not match the expected value.",
        ),
    ]
    await create_user_group(env, "other", [])
    cases.append((group_id, {"name": "other"}, "User group 'other' already exists."))
    before = await user_groups(env)
    for target, params, msg in cases:
        assert_error(await client.patch(f"/user_groups/{target}", params), msg)
    # Only the creator (can_manage_group) and can_manage_all_groups (owners by default)
    # change the group; a member does not.
    assert_success(
        await client.post(f"/user_groups/{group_id}/members", {"add": [env.users["othello"].id]})
    )
    before = await user_groups(env)
    for outsider in ("othello", "shiva"):
        assert_error(
            await env.client(outsider).patch(f"/user_groups/{group_id}", {"name": "x"}),
            "Insufficient permission",
        )
    assert await user_groups(env) == before
    assert_success(await env.client("desdemona").patch(f"/user_groups/{group_id}", {"name": "s"}))


async def test_delete_is_gone(env: TestEnv) -> None:
    """DELETE /user_groups/{id} went at feature level 294: the path answers PATCH only."""
    group_id = await create_user_group(env, "players", ["hamlet"])
    response = await env.client("hamlet").delete(f"/user_groups/{group_id}")
    assert response.status_code == 405
    assert "players" in await user_groups(env)


async def test_members(env: TestEnv) -> None:
    ids = {name: user.id for name, user in env.users.items()}
    group_id = await create_user_group(env, "players", ["hamlet"])
    path = f"/user_groups/{group_id}/members"
    client = env.client("hamlet")
    assert_success(await client.post(path, {"add": [ids["othello"], ids["polonius"]]}))
    assert_success(await client.post(path, {"delete": [ids["polonius"]], "add": [ids["iago"]]}))
    body = assert_success(await client.get(path))
    assert body["members"] == sorted([ids["hamlet"], ids["othello"], ids["iago"]])
    before = await user_groups(env)
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {},
            'Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or'
            ' "delete_subgroups".',
        ),
        ({"add": [ids["hamlet"]]}, f"User {ids['hamlet']} is already a member of this group"),
        ({"add": [9999]}, "Invalid user ID: 9999"),
        ({"delete": [ids["shiva"]]}, f"There is no member '{ids['shiva']}' in this user group"),
        # The addition would succeed, but the removal fails: neither happens.
        (
            {"add": [ids["shiva"]], "delete": [ids["desdemona"]]},
            f"There is no member '{ids['desdemona']}' in this user group",
        ),
    ]
    for params, msg in cases:
        assert_error(await client.post(path, params), msg)
    assert_error(
        await client.post("/user_groups/9999/members", {"add": [ids["shiva"]]}),
        "Invalid user group",
    )
    system = before["role:members"]["id"]
    assert_error(
        await env.client("iago").post(f"/user_groups/{system}/members", {"add": [ids["shiva"]]}),
        "Insufficient permission",
    )
    assert await user_groups(env) == before


async def test_membership_reads(env: TestEnv) -> None:
    ids = {name: user.id for name, user in env.users.items()}
    inner = await create_user_group(env, "inner", ["othello"])
    outer = await create_user_group(env, "outer", ["hamlet"])
    client = env.client("hamlet")
    assert_success(await client.post(f"/user_groups/{outer}/subgroups", {"add": [inner]}))
    members = assert_success(await client.get(f"/user_groups/{outer}/members"))["members"]
    assert members == sorted([ids["hamlet"], ids["othello"]])
    direct = assert_success(
        await client.get(f"/user_groups/{outer}/members", {"direct_member_only": True})
    )
    assert direct["members"] == [ids["hamlet"]]
    is_member = f"/user_groups/{outer}/members/{ids['othello']}"
    assert assert_success(await client.get(is_member))["is_user_group_member"] is True
    body = assert_success(await client.get(is_member, {"direct_member_only": True}))
    assert body["is_user_group_member"] is False
    body = assert_success(await client.get(f"/user_groups/{outer}/members/{ids['iago']}"))
    assert body["is_user_group_member"] is False
    assert_error(await client.get(f"/user_groups/{outer}/members/9999"), "No such user")
    assert_error(await client.get("/user_groups/9999/members"), "Invalid user group")
    # System groups nest: an owner is a member of role:members through its subgroups.
    groups = await user_groups(env)
    members_group = groups["role:members"]["id"]
    body = assert_success(
        await client.get(f"/user_groups/{members_group}/members/{ids['desdemona']}")
    )
    assert body["is_user_group_member"] is True
    for path in (
        "/user_groups",
        f"/user_groups/{outer}/members",
        f"/user_groups/{outer}/subgroups",
    ):
        assert_error(await env.client("polonius").get(path), "Not allowed for guest users")


async def test_subgroups(env: TestEnv) -> None:
    a = await create_user_group(env, "a", ["hamlet"])
    b = await create_user_group(env, "b", ["hamlet"])
    c = await create_user_group(env, "c", ["hamlet"])
    groups = await user_groups(env)
    admins = groups["role:administrators"]["id"]
    client = env.client("hamlet")
    assert_success(await client.post(f"/user_groups/{a}/subgroups", {"add": [b, admins]}))
    assert_success(await client.post(f"/user_groups/{b}/subgroups", {"add": [c]}))
    body = assert_success(await client.get(f"/user_groups/{a}/subgroups"))
    owners = groups["role:owners"]["id"]
    assert body["subgroups"] == sorted([b, c, admins, owners])
    body = assert_success(
        await client.get(f"/user_groups/{a}/subgroups", {"direct_subgroup_only": True})
    )
    assert body["subgroups"] == sorted([b, admins])
    before = await user_groups(env)
    cases: list[tuple[int, dict[str, Any], str]] = [
        (a, {}, 'Nothing to do. Specify at least one of "add" or "delete".'),
        (a, {"add": [b]}, f"User group {b} is already a subgroup of this group."),
        (c, {"add": [a]}, f"User group {c} is already a subgroup of one of the passed subgroups."),
        (a, {"add": [a]}, f"User group {a} is already a subgroup of one of the passed subgroups."),
        (a, {"add": [9999]}, "Invalid user group ID: 9999"),
        (a, {"delete": [c]}, f"User group {c} is not a subgroup of this group."),
        (admins, {"add": [a]}, "Insufficient permission"),
        (9999, {"add": [a]}, "Invalid user group"),
    ]
    for target, params, msg in cases:
        assert_error(await client.post(f"/user_groups/{target}/subgroups", params), msg)
    assert await user_groups(env) == before
    assert_success(await client.post(f"/user_groups/{a}/subgroups", {"delete": [b]}))
    assert (await user_groups(env))["a"]["direct_subgroup_ids"] == [admins]
