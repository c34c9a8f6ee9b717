"""``user_group`` events from ``/user_groups``: shapes, recipients, and that old state plus
the events equals a fresh ``realm_user_groups``."""

from __future__ import annotations

from tests.events.verify import call_api, verify_action
from tests.group_settings_helpers import create_user_group
from tests.helpers import TestEnv, assert_success, without_id


async def _group_ids(env: TestEnv) -> dict[str, int]:
    body = assert_success(await env.client("hamlet").get("/user_groups"))
    return {g["name"]: g["id"] for g in body["user_groups"]}


async def test_create_sends_add_to_everyone(env: TestEnv) -> None:
    hamlet = env.users["hamlet"]
    params = {"name": "players", "description": "Actors", "members": [hamlet.id]}
    for user in ("polonius", "othello"):
        name = f"players-{user}"
        events = await verify_action(
            env,
            env.users[user],
            call_api(env, "hamlet", "post", "/user_groups/create", {**params, "name": name}),
            num_events=1,
        )
    ids = await _group_ids(env)
    event = without_id(events[0])
    assert isinstance(event["group"].pop("date_created"), int)
    creator = {"direct_members": [hamlet.id], "direct_subgroups": []}
    assert event == {
        "type": "user_group",
        "op": "add",
        "group": {
            "id": ids["players-othello"],
            "name": "players-othello",
            "description": "Actors",
            "members": [hamlet.id],
            "direct_subgroup_ids": [],
            "is_system_group": False,
            "creator_id": hamlet.id,
            "deactivated": False,
            "can_add_members_group": creator,
            "can_join_group": ids["role:nobody"],
            "can_leave_group": ids["role:everyone"],
            "can_manage_group": creator,
            "can_mention_group": ids["role:everyone"],
            "can_remove_members_group": ids["role:nobody"],
        },
    }


async def test_update_sends_one_event_per_property(env: TestEnv) -> None:
    group_id = await create_user_group(env, "players", ["hamlet"])
    admins = (await _group_ids(env))["role:administrators"]
    anonymous = {"direct_members": [env.users["othello"].id], "direct_subgroups": [admins]}
    params = {
        "name": "actors",
        "description": "New",
        "can_mention_group": {"new": admins},
        "can_join_group": {"new": anonymous},
    }
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "patch", f"/user_groups/{group_id}", params),
        num_events=4,
    )
    assert [without_id(e) for e in events] == [
        {"type": "user_group", "op": "update", "group_id": group_id, "data": {key: value}}
        for key, value in [
            ("name", "actors"),
            ("description", "New"),
            ("can_join_group", anonymous),
            ("can_mention_group", admins),
        ]
    ]
    # Nothing changed, nothing sent.
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "patch", f"/user_groups/{group_id}", {"name": "actors"}),
        num_events=0,
    )


async def test_members_events(env: TestEnv) -> None:
    group_id = await create_user_group(env, "players", ["hamlet"])
    ids = {name: user.id for name, user in env.users.items()}
    path = f"/user_groups/{group_id}/members"
    events = await verify_action(
        env,
        env.users["iago"],
        call_api(
            env,
            "hamlet",
            "post",
            path,
            {"add": [ids["othello"], ids["shiva"]], "delete": [ids["hamlet"]]},
        ),
        num_events=2,
    )
    assert [without_id(e) for e in events] == [
        {
            "type": "user_group",
            "op": "add_members",
            "group_id": group_id,
            "user_ids": [ids["othello"], ids["shiva"]],
        },
        {
            "type": "user_group",
            "op": "remove_members",
            "group_id": group_id,
            "user_ids": [ids["hamlet"]],
        },
    ]
    await verify_action(
        env,
        env.users["polonius"],
        call_api(env, "hamlet", "post", path, {"delete": [ids["othello"]]}),
        num_events=1,
    )


async def test_subgroup_events(env: TestEnv) -> None:
    a = await create_user_group(env, "a", ["hamlet"])
    b = await create_user_group(env, "b", [])
    admins = (await _group_ids(env))["role:administrators"]
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", f"/user_groups/{a}/subgroups", {"add": [b, admins]}),
        num_events=1,
    )
    assert without_id(events[0]) == {
        "type": "user_group",
        "op": "add_subgroups",
        "group_id": a,
        "direct_subgroup_ids": [b, admins],
    }
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", f"/user_groups/{a}/subgroups", {"delete": [admins]}),
        num_events=1,
    )
    assert without_id(events[0]) == {
        "type": "user_group",
        "op": "remove_subgroups",
        "group_id": a,
        "direct_subgroup_ids": [admins],
    }


async def test_deactivation_events(env: TestEnv) -> None:
    """Feature level 294: a client with include_deactivated_groups sees the group's
    ``deactivated`` change; the others see it removed."""
    a = await create_user_group(env, "a", ["hamlet"])
    b = await create_user_group(env, "b", ["hamlet"])
    c = await create_user_group(env, "c", ["hamlet"])
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", f"/user_groups/{b}/deactivate"),
        num_events=1,
        client_capabilities={"include_deactivated_groups": True},
    )
    assert without_id(events[0]) == {
        "type": "user_group",
        "op": "update",
        "group_id": b,
        "data": {"deactivated": True},
    }
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", f"/user_groups/{c}/deactivate"),
        num_events=1,
    )
    assert without_id(events[0]) == {"type": "user_group", "op": "remove", "group_id": c}
    # A deactivated group may still be renamed (feature level 340): clients that keep
    # deactivated groups follow the change.
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "patch", f"/user_groups/{b}", {"name": "old b"}),
        num_events=1,
        client_capabilities={"include_deactivated_groups": True},
    )
    await verify_action(
        env,
        env.users["iago"],
        call_api(env, "hamlet", "post", f"/user_groups/{a}/deactivate"),
        num_events=1,
    )


async def test_members_endpoint_subgroup_events(env: TestEnv) -> None:
    """Feature level 311: /members adds and removes subgroups too."""
    a = await create_user_group(env, "a", ["hamlet"])
    b = await create_user_group(env, "b", [])
    path = f"/user_groups/{a}/members"
    ids = {name: user.id for name, user in env.users.items()}
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", path, {"add": [ids["othello"]], "add_subgroups": [b]}),
        num_events=2,
    )
    assert [e["op"] for e in events] == ["add_members", "add_subgroups"]
    events = await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", path, {"delete_subgroups": [b]}),
        num_events=1,
    )
    assert without_id(events[0]) == {
        "type": "user_group",
        "op": "remove_subgroups",
        "group_id": a,
        "direct_subgroup_ids": [b],
    }


async def test_queues_without_user_groups(env: TestEnv) -> None:
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", "/user_groups/create", {"name": "x", "description": ""}),
        num_events=0,
        event_types=["realm"],
    )
    await verify_action(
        env,
        env.users["othello"],
        call_api(env, "hamlet", "post", "/user_groups/create", {"name": "y", "description": ""}),
        num_events=1,
        fetch_event_types=["realm"],
    )
