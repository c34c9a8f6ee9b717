"""User groups as Zulip 10.2 has them: each group's group-valued permissions (who may
manage, join, leave, add and remove members, mention), deactivation instead of deletion,
and subgroups through ``/members``."""

from __future__ import annotations

from typing import Any

from tests.group_settings_helpers import create_user_group, set_group_setting, user_groups
from tests.helpers import TestEnv, assert_error, assert_success


async def _set(env: TestEnv, group_id: int, setting: str, value: Any, user: str = "hamlet") -> None:
    path = f"/user_groups/{group_id}"
    assert_success(await env.client(user).patch(path, {setting: {"new": value}}))


async def test_create_with_settings_and_subgroups(env: TestEnv) -> None:
    groups = await user_groups(env)
    admins, members = groups["role:administrators"]["id"], groups["role:members"]["id"]
    othello = env.users["othello"].id
    inner = await create_user_group(env, "inner", ["othello"])
    anonymous = {"direct_members": [othello], "direct_subgroups": [admins]}
    # Feature level 311: subgroups at creation; settings as group-setting values.
    outer = await create_user_group(
        env,
        "outer",
        [],
        subgroups=[inner, admins],
        can_manage_group=anonymous,
        can_join_group=members,
        can_mention_group={"direct_members": [], "direct_subgroups": [admins]},
        # No one at all is role:nobody.
        can_leave_group={"direct_members": [], "direct_subgroups": []},
    )
    group = (await user_groups(env))["outer"]
    assert group["direct_subgroup_ids"] == sorted([inner, admins])
    assert group["can_manage_group"] == anonymous
    assert group["can_join_group"] == members
    assert group["can_mention_group"] == admins
    assert group["can_leave_group"] == groups["role:nobody"]["id"]
    # othello manages through the anonymous group, though not a member.
    assert_success(await env.client("othello").patch(f"/user_groups/{outer}", {"name": "o"}))


async def test_join_and_leave(env: TestEnv) -> None:
    ids = {name: user.id for name, user in env.users.items()}
    groups = await user_groups(env)
    group_id = await create_user_group(env, "players", ["hamlet"])
    path = f"/user_groups/{group_id}/members"
    othello = env.client("othello")
    # can_join_group is nobody by default.
    assert_error(await othello.post(path, {"add": [ids["othello"]]}), "Insufficient permission")
    await _set(env, group_id, "can_join_group", groups["role:members"]["id"])
    assert_success(await othello.post(path, {"add": [ids["othello"]]}))
    # Joining oneself is not adding others (can_add_members_group: the creator).
    assert_error(await othello.post(path, {"add": [ids["shiva"]]}), "Insufficient permission")
    # can_leave_group is everyone by default; othello leaves, then joins again.
    assert_success(await othello.post(path, {"delete": [ids["othello"]]}))
    assert_success(await othello.post(path, {"add": [ids["othello"]]}))
    await _set(env, group_id, "can_leave_group", groups["role:nobody"]["id"])
    assert_error(await othello.post(path, {"delete": [ids["othello"]]}), "Insufficient permission")
    # Removing others needs can_remove_members_group (or can_manage_group).
    assert_error(await othello.post(path, {"delete": [ids["hamlet"]]}), "Insufficient permission")
    anonymous = {"direct_members": [ids["othello"]], "direct_subgroups": []}
    await _set(env, group_id, "can_remove_members_group", anonymous)
    assert_success(await othello.post(path, {"delete": [ids["hamlet"]]}))
    # can_remove_members_group also lets one leave.
    assert_success(await othello.post(path, {"delete": [ids["othello"]]}))
    # can_add_members_group lets othello add anyone, himself included.
    await _set(env, group_id, "can_add_members_group", anonymous)
    assert_success(await othello.post(path, {"add": [ids["othello"], ids["shiva"]]}))
    body = assert_success(await othello.get(path))
    assert body["members"] == sorted([ids["othello"], ids["shiva"]])
    # Only can_manage_group changes the settings.
    assert_error(
        await othello.patch(f"/user_groups/{group_id}", {"can_join_group": {"new": anonymous}}),
        "Insufficient permission",
    )


async def test_manage_all_groups_and_guests(env: TestEnv) -> None:
    ids = {name: user.id for name, user in env.users.items()}
    group_id = await create_user_group(env, "players", ["hamlet"])
    path = f"/user_groups/{group_id}/members"
    # Owners manage every group (can_manage_all_groups' default), administrators not.
    assert_error(
        await env.client("iago").post(path, {"add": [ids["iago"]]}), "Insufficient permission"
    )
    assert_success(await env.client("desdemona").post(path, {"add": [ids["iago"]]}))
    await set_group_setting(env, "can_manage_all_groups", "role:administrators")
    assert_success(await env.client("iago").post(path, {"delete": [ids["iago"]]}))
    # A guest named by a setting still cannot use the endpoints.
    guest = {"direct_members": [ids["polonius"]], "direct_subgroups": []}
    await _set(env, group_id, "can_join_group", guest)
    assert_error(
        await env.client("polonius").post(path, {"add": [ids["polonius"]]}),
        "Not allowed for guest users",
    )


async def test_update_settings_old_and_new(env: TestEnv) -> None:
    groups = await user_groups(env)
    everyone, admins = groups["role:everyone"]["id"], groups["role:administrators"]["id"]
    group_id = await create_user_group(env, "players", ["hamlet"])
    path = f"/user_groups/{group_id}"
    client = env.client("hamlet")
    assert_error(
        await client.patch(path, {"can_mention_group": {"new": admins, "old": admins}}),
        "'old' value does not match the expected value.",
    )
    assert_success(
        await client.patch(path, {"can_mention_group": {"new": admins, "old": everyone}})
    )
    creator = {"direct_members": [env.users["hamlet"].id], "direct_subgroups": []}
    # An anonymous old value matches by its members and subgroups.
    assert_success(await client.patch(path, {"can_manage_group": {"new": admins, "old": creator}}))
    listed = (await user_groups(env))["players"]
    assert (listed["can_mention_group"], listed["can_manage_group"]) == (admins, admins)
    # hamlet is no longer a manager: can_manage_group is the administrators now.
    assert_error(await client.patch(path, {"name": "x"}), "Insufficient permission")
    assert_error(
        await env.client("iago").patch(
            path, {"can_manage_group": {"new": groups["role:internet"]["id"]}}
        ),
        "'can_manage_group' setting cannot be set to 'role:internet' group.",
    )


async def test_deactivate(env: TestEnv) -> None:
    ids = {name: user.id for name, user in env.users.items()}
    groups = await user_groups(env)
    group_id = await create_user_group(env, "players", ["hamlet"])
    deactivate = f"/user_groups/{group_id}/deactivate"
    assert_error(await env.client("othello").post(deactivate), "Insufficient permission")
    assert_error(
        await env.client("desdemona").post(
            f"/user_groups/{groups['role:members']['id']}/deactivate"
        ),
        "Insufficient permission",
    )
    assert_error(
        await env.client("hamlet").post("/user_groups/9999/deactivate"), "Invalid user group"
    )
    assert_success(await env.client("hamlet").post(deactivate))
    # Gone from the default lists (feature level 294), kept with its members otherwise.
    assert "players" not in await user_groups(env)
    listed = (await user_groups(env, include_deactivated_groups=True))["players"]
    assert (listed["deactivated"], listed["members"]) == (True, [ids["hamlet"]])
    register = assert_success(
        await env.client("hamlet").post("/register", {"fetch_event_types": ["realm_user_groups"]})
    )
    assert group_id not in [g["id"] for g in register["realm_user_groups"]]
    register = assert_success(
        await env.client("hamlet").post(
            "/register",
            {
                "fetch_event_types": ["realm_user_groups"],
                "client_capabilities": {"include_deactivated_groups": True},
            },
        )
    )
    assert group_id in [g["id"] for g in register["realm_user_groups"]]
    client = env.client("hamlet")
    assert_error(await client.post(deactivate), "User group is deactivated.")
    assert_error(
        await client.post(f"/user_groups/{group_id}/members", {"add": [ids["othello"]]}),
        "User group is deactivated.",
    )
    # A deactivated group can be renamed and described (feature level 340) but not
    # reactivated through PATCH, which came after Zulip 10.2.
    body = assert_success(
        await client.patch(
            f"/user_groups/{group_id}", {"name": "old players", "deactivated": False}
        )
    )
    assert body["ignored_parameters_unsupported"] == ["deactivated"]
    listed = (await user_groups(env, include_deactivated_groups=True))["old players"]
    assert listed["deactivated"] is True
    # Its name stays taken.
    assert_error(
        await client.post("/user_groups/create", {"name": "old players", "description": ""}),
        "User group 'old players' already exists.",
    )


async def test_deactivate_refuses_a_group_in_use(env: TestEnv) -> None:
    inner = await create_user_group(env, "inner", ["hamlet"])
    outer = await create_user_group(env, "outer", ["hamlet"], subgroups=[inner])
    user_of = await create_user_group(env, "user", ["hamlet"], can_mention_group=inner)
    await set_group_setting(
        env, "can_create_groups", {"direct_members": [], "direct_subgroups": [inner, outer]}
    )
    response = await env.client("hamlet").post(f"/user_groups/{inner}/deactivate")
    body = response.json()
    assert (response.status_code, body["code"], body["msg"]) == (
        400,
        "CANNOT_DEACTIVATE_GROUP_IN_USE",
        "Cannot deactivate user group in use.",
    )
    assert body["objections"] == [
        {"type": "subgroup", "supergroup_ids": [outer]},
        {"type": "user_group", "group_id": user_of, "settings": ["can_mention_group"]},
        {"type": "realm", "settings": ["can_create_groups"]},
    ]
    assert (await user_groups(env))["inner"]["deactivated"] is False
    # Once nothing uses it, it goes; a deactivated supergroup does not object.
    await set_group_setting(env, "can_create_groups", "role:members")
    await _set(env, user_of, "can_mention_group", (await user_groups(env))["role:everyone"]["id"])
    assert_success(await env.client("hamlet").post(f"/user_groups/{outer}/deactivate"))
    assert_success(await env.client("hamlet").post(f"/user_groups/{inner}/deactivate"))


async def test_subgroups_through_members(env: TestEnv) -> None:
    """Feature level 311: add_subgroups and delete_subgroups beside add and delete."""
    ids = {name: user.id for name, user in env.users.items()}
    a = await create_user_group(env, "a", ["hamlet"])
    b = await create_user_group(env, "b", [])
    path = f"/user_groups/{a}/members"
    client = env.client("hamlet")
    assert_success(await client.post(path, {"add": [ids["othello"]], "add_subgroups": [b]}))
    group = (await user_groups(env))["a"]
    assert (group["members"], group["direct_subgroup_ids"]) == (
        sorted([ids["hamlet"], ids["othello"]]),
        [b],
    )
    before = await user_groups(env)
    for params, msg in [
        ({"add_subgroups": [b]}, f"User group {b} is already a subgroup of this group."),
        ({"delete_subgroups": [9999]}, "Invalid user group ID: 9999"),
        # The member removal would succeed; the subgroup addition fails: nothing happens.
        (
            {"delete": [ids["othello"]], "add_subgroups": [a]},
            f"User group {a} is already a subgroup of one of the passed subgroups.",
        ),
    ]:
        assert_error(await client.post(path, params), msg)
    assert await user_groups(env) == before
    assert_error(
        await env.client("othello").post(path, {"delete_subgroups": [b]}), "Insufficient permission"
    )
    assert_success(await client.post(path, {"delete_subgroups": [b]}))
    assert (await user_groups(env))["a"]["direct_subgroup_ids"] == []


async def test_mention_needs_can_mention_group(env: TestEnv) -> None:
    groups = await user_groups(env)
    await env.subscribe("hamlet", "Denmark")
    await env.subscribe("iago", "Denmark")
    await create_user_group(
        env, "players", ["othello"], can_mention_group=groups["role:administrators"]["id"]
    )

    async def send(user: str, content: str) -> Any:
        params = {"type": "stream", "to": "Denmark", "topic": "t", "content": content}
        return await env.client(user).post("/messages", params)

    assert_error(
        await send("hamlet", "@*players* hello"),
        "You are not allowed to mention user group 'players'.",
    )
    # A silent mention notifies nobody and needs no permission.
    assert_success(await send("hamlet", "@_*players* hello"))
    assert_success(await send("iago", "@*players* hello"))
    # A deactivated group is no mention at all.
    group_id = (await user_groups(env))["players"]["id"]
    assert_success(await env.client("hamlet").post(f"/user_groups/{group_id}/deactivate"))
    body = assert_success(await send("hamlet", "@*players* hello"))
    message = assert_success(await env.client("hamlet").get(f"/messages/{body['id']}"))
    assert "user-group-mention" not in message["message"]["content"]


async def test_group_names_refuse_control_characters(env: TestEnv) -> None:
    response = await env.client("iago").post(
        "/user_groups/create",
        {"name": "bad\x1b[31mname", "description": "d", "members": "[]"},
    )
    assert_error(response, "Invalid character in user group name, at position 4!")
